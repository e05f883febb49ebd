// The dispatcher: sends the outbox's pending deliveries when they are due, a few at once, and records each attempt.
// Everything it knows is in the tables, so a restart resumes where a crash left off (at least once, never lost).
import type { Clock } from '../domain/clock.ts';
import { USER_AGENT } from '../domain/webhooks.ts';
import type { AttemptResult, DeliveryRepository, DueDelivery } from '../db/webhook-deliveries.ts';
import type { WebhookRepository } from '../db/webhooks.ts';
import type { Leadership } from '../db/engine.ts';
import type { Logger } from '../http/logger.ts';
import { postDelivery, type PostOutcome } from './post.ts';
import { signedHeaders } from './signing.ts';

/** Attempts under way at once, over all endpoints and per endpoint (one slow endpoint leaves room for the others). */
const MAX_IN_FLIGHT = 8;
const MAX_PER_ENDPOINT = 4;
/** The longest the dispatcher sleeps while deliveries wait: it follows a clock that jumps (tests, a corrected system clock). */
const MAX_SLEEP_MS = 1_000;
/** After an unexpected failure of its own (the database busy), it tries again this much later. */
const RECOVERY_MS = 1_000;
/** The loop that runs once in a deployment; an instance that does not lead it asks again this often (to take over). */
const LEAD = 'webhook-dispatcher';
const FOLLOWER_ASKS_EVERY_MS = 1_000;

/** What the dispatcher reads and records with, and whom it sends through. */
export interface DispatcherOptions {
  /** Only the queries both engines answer alike: the dispatcher runs on SQLite's repositories and PostgreSQL's. */
  webhooks: Pick<WebhookRepository, 'enabledWebhooks' | 'findTarget'>;
  deliveries: Pick<DeliveryRepository, 'dueDeliveries' | 'findPending' | 'nextDueAfter' | 'recordAttempt'>;
  /** Whether the database is still open: after it closes there is nothing to do. */
  isOpen: () => boolean;
  /** Only the leader of `webhook-dispatcher` sends (one instance of a deployment); asked at every round. */
  leadership: Leadership;
  /** Calls `wake` whenever the outbox has written (in any instance); returns the function that stops calling it. */
  onWritten: (wake: () => void) => () => void;
  fetch: typeof globalThis.fetch;
  clock: Clock;
  logger: Logger;
  /** Waits before the retries, ms; after the last retry fails the delivery is `failed`. */
  retryScheduleMs: readonly number[];
  timeoutMs: number;
}

/** The running dispatcher. */
export interface Dispatcher {
  /** Looks for due deliveries soon (on the next turn of the event loop). */
  wake(): void;
  /**
   * Makes the first attempt of a delivery now, past the bounds on attempts at once and whether or not this instance
   * leads (an admin's test send, answered by the instance that got it); resolves once its outcome is stored, or at
   * once when it is no longer pending or the dispatcher has stopped.
   */
  attemptNow(deliveryId: string): Promise<void>;
  /** Starts no more attempts and gives up leading; resolves once those under way have ended (each bounded by the timeout; `abort` cuts them). */
  stop(): Promise<void>;
  /** Ends the attempts under way at once; they stay pending and are sent again after a restart. */
  abort(): void;
}

/** Returns what an attempt's outcome makes of the delivery: `attempt` is this attempt's number (1 for the first). */
export function attemptResult(outcome: Exclude<PostOutcome, { kind: 'stopped' }>, attempt: number, retryScheduleMs: readonly number[], now: Date): AttemptResult {
  const responseStatus = outcome.kind === 'answered' ? outcome.status : undefined;
  if (responseStatus !== undefined && responseStatus >= 200 && responseStatus < 300) {
    return { status: 'succeeded', responseStatus, error: undefined, nextAttemptAt: undefined };
  }
  if (responseStatus === 410) {
    const reason = `The endpoint answered 410 Gone on ${now.toISOString()}; enable it again to resume deliveries.`;
    return { status: 'failed', responseStatus, error: 'The endpoint answered 410 Gone: it is disabled.', nextAttemptAt: undefined, disable: reason };
  }
  const wait = retryScheduleMs[attempt - 1];
  return wait === undefined
    ? { status: 'failed', responseStatus, error: outcome.error, nextAttemptAt: undefined }
    : { status: 'pending', responseStatus, error: outcome.error, nextAttemptAt: new Date(now.getTime() + wait) };
}

/** Returns a started dispatcher: woken by the outbox's writes, `stop()` at shutdown. */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { webhooks, deliveries, isOpen, leadership, onWritten, fetch, clock, logger, retryScheduleMs, timeoutMs } = options;
  const inFlight = new Map<string, Promise<void>>();
  const perEndpoint = new Map<number, number>();
  const stopping = new AbortController();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let woken = false;
  /** The round under way, and whether another was asked for meanwhile: one round at a time starts attempts. */
  let round: Promise<void> | undefined;
  let again = false;
  /** Where the next round starts among the endpoints, so each gets its turn at the free slots. */
  let turn = 0;

  const sleep = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(fill, Math.max(0, Math.min(ms, MAX_SLEEP_MS)));
    timer.unref(); // a pending retry never keeps a process alive: stop() ends the service's dispatcher
  };
  const ended = () => stopped || !isOpen();

  /** Sends one attempt of the delivery and records its outcome; resolves once that is stored. */
  const attempt = async (delivery: DueDelivery): Promise<void> => {
    const target = await webhooks.findTarget(delivery.webhookSeq, clock());
    if (!target?.enabled) return;
    const timestamp = Math.floor(clock().getTime() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      ...signedHeaders(target.secrets, delivery.eventId, timestamp, delivery.body),
    };
    const outcome = await postDelivery(fetch, { url: target.url, headers, body: delivery.body }, timeoutMs, stopping.signal);
    if (outcome.kind === 'stopped' || !isOpen()) return; // not an attempt: the delivery stays pending for the next start
    const now = clock();
    const result = attemptResult(outcome, delivery.attempt + 1, retryScheduleMs, now);
    await deliveries.recordAttempt(delivery.id, delivery.webhookSeq, result, now);
    const fields = { deliveryId: delivery.id, eventId: delivery.eventId, attempt: delivery.attempt + 1, status: result.status, responseStatus: result.responseStatus };
    if (result.status === 'failed') logger.warn('webhook delivery failed', { ...fields, error: result.error });
    else logger.info('webhook delivery', { ...fields, ...(result.error ? { error: result.error } : {}) });
  };

  /** Starts the attempt and keeps count of it until its outcome is stored. */
  const start = (delivery: DueDelivery): Promise<void> => {
    const seq = delivery.webhookSeq;
    perEndpoint.set(seq, (perEndpoint.get(seq) ?? 0) + 1);
    const done = attempt(delivery)
      .catch((error: unknown) => logger.error('webhook attempt not recorded', { deliveryId: delivery.id, error: String(error) }))
      .finally(() => {
        inFlight.delete(delivery.id);
        perEndpoint.set(seq, perEndpoint.get(seq)! - 1);
        wake();
      });
    inFlight.set(delivery.id, done);
    return done;
  };

  /** Starts due deliveries into the free slots, one endpoint after another, then sleeps until the next is due. */
  const fillSlots = async (): Promise<void> => {
    // Another instance leads: it delivers. Ask again later, so that this one takes over when that one is gone.
    const leads = await leadership.tryLead(LEAD);
    if (ended()) return;
    if (!leads) return sleep(FOLLOWER_ASKS_EVERY_MS);
    const now = clock();
    const endpoints = await webhooks.enabledWebhooks();
    turn = endpoints.length ? (turn + 1) % endpoints.length : 0;
    for (let started = true; started && inFlight.size < MAX_IN_FLIGHT; ) {
      started = false;
      for (let i = 0; i < endpoints.length && inFlight.size < MAX_IN_FLIGHT; i++) {
        const seq = endpoints[(turn + i) % endpoints.length]!;
        const busy = perEndpoint.get(seq) ?? 0;
        if (busy >= MAX_PER_ENDPOINT) continue;
        // Those under way are still pending in the table: ask for enough to find one that is not.
        const due = await deliveries.dueDeliveries(seq, now, busy + 1);
        if (ended()) return;
        const next = due.find((d) => !inFlight.has(d.id));
        if (!next) continue;
        void start(next);
        started = true;
      }
    }
    // Due deliveries left waiting for a slot start when an attempt ends; sleep until the next one falls due.
    const nextDue = await deliveries.nextDueAfter(now);
    if (ended()) return;
    if (nextDue) sleep(nextDue.getTime() - now.getTime());
    else clearTimeout(timer);
  };

  /** Runs a round unless one is under way (then another follows it). */
  function fill(): void {
    woken = false;
    if (ended()) return;
    if (round) {
      again = true;
      return;
    }
    round = fillSlots()
      .catch((error: unknown) => {
        if (ended()) return; // the database closed under the round: nothing is left to do
        logger.error('webhook dispatcher failed; trying again', { error: String(error) });
        sleep(RECOVERY_MS);
      })
      .finally(() => {
        round = undefined;
        if (again) {
          again = false;
          fill();
        }
      });
  }

  /** Looks for due deliveries on the next turn of the event loop (after the transaction that wrote them commits). */
  function wake(): void {
    if (stopped || woken) return;
    woken = true;
    setImmediate(fill);
  }

  const stopListening = onWritten(wake);
  wake();

  return {
    wake,

    async attemptNow(deliveryId) {
      const delivery = inFlight.has(deliveryId) || stopped ? undefined : await deliveries.findPending(deliveryId);
      // A round may have started it meanwhile: then wait for that attempt.
      const running = inFlight.get(deliveryId);
      if (running) return running;
      if (delivery && !stopped) return start(delivery);
    },

    async stop() {
      stopped = true;
      stopListening();
      clearTimeout(timer);
      await round;
      await Promise.all(inFlight.values());
      await leadership.resign(LEAD);
    },

    abort() {
      stopping.abort();
    },
  };
}
