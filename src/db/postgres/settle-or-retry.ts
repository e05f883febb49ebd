// A claim this instance could not let go of (the database unreachable at that moment: a failover) must not stay held:
// while this instance lives, its lease keeps the claim, and every other instance's duplicate would wait for it.

/** Waits between attempts, and how many are made: about as long as the instances' leases are meant to be. */
const RETRY_MS = 1_000;
const ATTEMPTS = 120;

/**
 * Runs `work` (which lets go of a claim, or stores its outcome); when it fails, tries it again every second in the
 * background until it succeeds (or for two minutes: after that, ending the lease lets go of everything), and
 * rethrows the first failure to the caller.
 */
export async function settleOrRetry(work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    let left = ATTEMPTS;
    const again = (): void => {
      if (left-- > 0) setTimeout(() => void work().catch(again), RETRY_MS).unref();
    };
    again();
    throw error;
  }
}
