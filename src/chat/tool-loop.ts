// One turn of the assistant with tools: the model streams text and may call tools; read tools run at once and their
// results go back to it, write tools become proposals; at most MAX_TOOL_STEPS rounds, then the turn ends in text.
import type { NewAction } from '../db/chat.ts';
import type { Finish, LanguageModel, ModelRequest, ModelTurn, ToolResult } from '../llm/model.ts';
import type { ToolTurn } from './tool.ts';
import type { RunTool } from './tool-runner.ts';

/** Rounds of tool calls whose results go back to the model in one turn. */
export const MAX_TOOL_STEPS = 5;

/** Where a turn's output goes as it comes; each answers false once nobody is listening (the turn then stops). */
export interface TurnOutput {
  text(piece: string): Promise<boolean>;
  proposal(action: NewAction): Promise<boolean>;
}

/** What a turn came to: its text, how the last model reply ended, and what it proposed. */
export interface TurnResult {
  text: string;
  finish: Finish;
  proposals: NewAction[];
}

/** Said when the model still calls tools after MAX_TOOL_STEPS rounds. */
export const STEP_LIMIT_NOTE = `I stopped after ${MAX_TOOL_STEPS} rounds of looking things up; ask a narrower question to go on.`;

/** Said when the model's tool input fails validation a second time in a turn. */
export const invalidAgainNote = (message: string) => `I could not use the tools for this request: ${message}`;

const NOBODY = new Error('Nobody is listening to the reply any more.');

/**
 * Runs one turn: streams its text to `out`, runs read tools and records proposals, and returns the whole turn. A
 * tool input that fails validation goes back to the model once as a tool error; a second one in the turn ends it
 * with a sentence saying so. Throws what the model throws (nothing is stored then), and NOBODY's reason is never
 * thrown: when `out` answers false the turn returns undefined.
 */
export async function runTurn(
  model: LanguageModel,
  request: ModelRequest,
  runTool: RunTool,
  turn: ToolTurn,
  out: TurnOutput,
): Promise<TurnResult | undefined> {
  const messages: ModelTurn[] = [...request.messages];
  const proposals: NewAction[] = [];
  let text = '';
  let invalidSent = false;

  const say = async (piece: string) => {
    if (!piece) return;
    text += piece;
    if (!(await out.text(piece))) throw NOBODY;
  };
  /** Ends the turn with a sentence of our own after what the model wrote. */
  const end = async (finish: Finish, sentence: string): Promise<TurnResult> => {
    await say(`${text && !text.endsWith('\n') ? '\n\n' : ''}${sentence}`);
    return { text, finish: { ...finish, reason: 'stop' }, proposals };
  };

  try {
    for (let step = 0; ; step++) {
      let stepText = '';
      let finish: Finish | undefined;
      const calls = [];
      for await (const part of model.stream({ ...request, messages })) {
        if (part.type === 'finish') finish = part.finish;
        else if (part.type === 'tool-call') calls.push(part.call);
        else {
          // Text after a round of tools starts a new paragraph.
          if (!stepText && step > 0 && text && !/\s$/.test(text) && !/^\s/.test(part.text)) await say('\n\n');
          stepText += part.text;
          await say(part.text);
        }
      }
      if (!finish) return undefined; // the signal ended the stream
      if (finish.reason !== 'tool_calls' || calls.length === 0) return { text, finish, proposals };
      if (step === MAX_TOOL_STEPS) return await end(finish, STEP_LIMIT_NOTE);

      const results: ToolResult[] = [];
      let invalid: ToolResult | undefined;
      for (const call of calls) {
        const outcome = await runTool(turn, call);
        if (outcome.invalid) invalid ??= outcome.result;
        if (outcome.proposal) {
          proposals.push(outcome.proposal);
          if (!(await out.proposal(outcome.proposal))) throw NOBODY;
        }
        results.push(outcome.result);
      }
      if (invalid && invalidSent) return await end(finish, invalidAgainNote(errorText(invalid)));
      if (invalid) invalidSent = true;
      messages.push({ role: 'assistant', content: stepText, toolCalls: calls }, { role: 'tool', results });
    }
  } catch (error) {
    if (error === NOBODY) return undefined;
    throw error;
  }
}

/** The message of a tool error, as the model read it. */
function errorText(result: ToolResult): string {
  try {
    const { error } = JSON.parse(result.content) as { error?: unknown };
    if (typeof error === 'string') return error;
  } catch {
    // not ours: quote it as it is
  }
  return result.content;
}
