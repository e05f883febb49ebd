// Asking a model for one JSON object: the provider's JSON mode, the reply read and repaired by the feature, an
// unusable reply asked for once more with what was wrong, and the ways a reply can fail said in words.
import { AppError } from '../domain/errors.ts';
import { cutReplyDetail, type LanguageModel, type ModelMessage } from './model.ts';

/** An unusable reply is shown back to the model at most this long. */
const ECHO_LIMIT = 4000;
/** A refusal is quoted in the problem detail up to this many characters. */
const REFUSAL_QUOTE_LIMIT = 300;

export type ReadResult<T> = { ok: true; value: T } | { ok: false; problem: string };

/** One question to the model whose answer is a JSON object the feature reads. */
export interface JsonQuestion<T> {
  system: string;
  user: string;
  /** The JSON Schema asked of the provider's JSON output mode, and its name. */
  json: { name: string; schema: Record<string, unknown> };
  /** The local generator's answer, as JSON text. */
  local: () => string;
  /** Reads (and repairs) a reply; says what is wrong with an unusable one. */
  read: (text: string) => ReadResult<T>;
  /** The follow-up asking once more after an unusable reply. */
  retry: (problem: string) => string;
  /** What is asked for, in the problem details: "a campaign", "segment conditions". */
  what: string;
  /** The same as a refusal names it: "this campaign". */
  refused: string;
}

/**
 * Returns the model's answer as the feature read it. An unusable reply is asked for once more, saying what was
 * wrong. Throws `llm_error` when the second reply is unusable too, when a reply was cut at the token budget (never
 * asked again: it would be cut again) or refused, and whatever the model throws (`llm_unavailable`, the signal's reason).
 */
export async function askForJson<T>(model: LanguageModel, question: JsonQuestion<T>, signal: AbortSignal): Promise<T> {
  const messages: ModelMessage[] = [{ role: 'user', content: question.user }];
  const ask = async () => {
    const reply = await model.complete({ system: question.system, messages, json: question.json, signal, local: question.local });
    if (reply.finish.reason === 'length') throw new AppError('llm_error', cutReplyDetail(reply.finish, reply.text.trim() !== ''));
    if (reply.finish.reason === 'refusal') {
      const words = reply.text.trim().replace(/\s+/g, ' ').slice(0, REFUSAL_QUOTE_LIMIT);
      throw new AppError('llm_error', words ? `The model refused to write ${question.refused}: "${words}"` : `The model refused to write ${question.refused}.`);
    }
    return reply.text;
  };

  const first = await ask();
  let result = question.read(first);
  if (!result.ok) {
    messages.push({ role: 'assistant', content: first.slice(0, ECHO_LIMIT) || '(empty)' }, { role: 'user', content: question.retry(result.problem) });
    result = question.read(await ask());
  }
  if (!result.ok) throw new AppError('llm_error', `The model's reply could not be used as ${question.what}, twice. ${result.problem}`);
  return result.value;
}
