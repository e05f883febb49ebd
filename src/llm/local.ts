// The local generator: the feature writes the reply from its own data, so the service works with no provider at all.
import { randomUUID } from 'node:crypto';
import { checkRequest, type Finish, type LanguageModel, type ModelRequest, type ToolCall } from './model.ts';
import { pause, type Sleep } from './sleep.ts';
import { stripControlCharacters } from './untrusted-text.ts';

/** The local generator's pacing; the text itself comes from each request. */
export interface LocalSettings {
  sleep: Sleep;
  /** Pause between streamed pieces, so clients see a stream behave like one. */
  pieceDelayMs?: number;
  wordsPerPiece?: number;
}

/** The local generator always finishes, or calls tools: it has no token budget and never reasons. */
const FINISHED: Finish = { reason: 'stop', reasoned: false, maxTokens: 0 };
const CALLED_TOOLS: Finish = { ...FINISHED, reason: 'tool_calls' };

/**
 * Returns the local language model; its calls throw only the signal's reason, what `request.local()` throws, and
 * Error for a request with both `json` and `tools`.
 */
export function createLocalModel({ sleep, pieceDelayMs = 15, wordsPerPiece = 3 }: LocalSettings): LanguageModel {
  return {
    provider: 'local',
    model: 'local',
    async complete(request) {
      request.signal.throwIfAborted();
      const { text, toolCalls } = localTurn(request);
      return { text, finish: toolCalls.length ? CALLED_TOOLS : FINISHED, ...(toolCalls.length ? { toolCalls } : {}) };
    },
    async *stream(request) {
      request.signal.throwIfAborted();
      const { text, toolCalls } = localTurn(request);
      const pieces = splitIntoPieces(text, wordsPerPiece);
      for (const [index, piece] of pieces.entries()) {
        if (index > 0) await pause(sleep, pieceDelayMs, request.signal);
        yield { type: 'text', text: piece };
      }
      for (const call of toolCalls) yield { type: 'tool-call', call };
      yield { type: 'finish', finish: toolCalls.length ? CALLED_TOOLS : FINISHED };
    },
  };
}

/** Returns what the feature's local generator answers to the request's conversation, every call with an id. */
function localTurn(request: ModelRequest): { text: string; toolCalls: ToolCall[] } {
  checkRequest(request);
  const turn = request.local(request.messages);
  if (typeof turn === 'string') return { text: stripControlCharacters(turn), toolCalls: [] };
  const toolCalls = (turn.toolCalls ?? []).map(({ id, name, input }) => ({ id: id ?? `local_${randomUUID().replaceAll('-', '')}`, name, input }));
  return { text: stripControlCharacters(turn.text ?? ''), toolCalls };
}

/** Returns the text cut before every `wordsPerPiece`-th word; the pieces join back to exactly the text. */
export function splitIntoPieces(text: string, wordsPerPiece: number): string[] {
  // Each word keeps the white space after it; white space before the first word stays with it.
  const words = text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += wordsPerPiece) pieces.push(words.slice(i, i + wordsPerPiece).join(''));
  return pieces;
}
