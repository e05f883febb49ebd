// The local generator: the feature writes the reply from its own data, so the service works with no provider at all.
import type { Finish, LanguageModel } from './model.ts';
import { pause, type Sleep } from './sleep.ts';
import { stripControlCharacters } from './untrusted-text.ts';

/** The local generator's pacing; the text itself comes from each request. */
export interface LocalSettings {
  sleep: Sleep;
  /** Pause between streamed pieces, so clients see a stream behave like one. */
  pieceDelayMs?: number;
  wordsPerPiece?: number;
}

/** The local generator always finishes: it has no token budget and never reasons. */
const FINISHED: Finish = { reason: 'stop', reasoned: false, maxTokens: 0 };

/** Returns the local language model; its calls throw only the signal's reason or what `request.local()` throws. */
export function createLocalModel({ sleep, pieceDelayMs = 15, wordsPerPiece = 3 }: LocalSettings): LanguageModel {
  return {
    provider: 'local',
    model: 'local',
    async complete(request) {
      request.signal.throwIfAborted();
      return { text: stripControlCharacters(request.local()), finish: FINISHED };
    },
    async *stream(request) {
      request.signal.throwIfAborted();
      const pieces = splitIntoPieces(stripControlCharacters(request.local()), wordsPerPiece);
      for (const [index, piece] of pieces.entries()) {
        if (index > 0) await pause(sleep, pieceDelayMs, request.signal);
        yield { type: 'text', text: piece };
      }
      yield { type: 'finish', finish: FINISHED };
    },
  };
}

/** Returns the text cut before every `wordsPerPiece`-th word; the pieces join back to exactly the text. */
export function splitIntoPieces(text: string, wordsPerPiece: number): string[] {
  // Each word keeps the white space after it; white space before the first word stays with it.
  const words = text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += wordsPerPiece) pieces.push(words.slice(i, i + wordsPerPiece).join(''));
  return pieces;
}
