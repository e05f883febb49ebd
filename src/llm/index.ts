// Picks the language model the configuration names; the one place that knows all providers.
import { ConfigError, type Config } from '../config.ts';
import type { Logger } from '../http/logger.ts';
import { createAnthropicModel } from './anthropic.ts';
import { createLocalModel } from './local.ts';
import type { LanguageModel } from './model.ts';
import { createOpenAiModel } from './openai.ts';
import { realSleep, type Sleep } from './sleep.ts';

export type {
  Finish,
  FinishReason,
  LanguageModel,
  LocalTurn,
  ModelMessage,
  ModelRequest,
  ModelTurn,
  Reply,
  ReplyPart,
  ToolCall,
  ToolResult,
  ToolResults,
  ToolSpec,
} from './model.ts';
export { collectReply, cutReplyDetail } from './model.ts';

/** What a model takes from outside; only the logger is required. */
export interface ModelDeps {
  logger: Logger;
  /** Defaults to the global fetch. */
  fetch?: typeof globalThis.fetch;
  /** Backoff and stream pacing; defaults to a real timer. */
  sleep?: Sleep;
  /** Backoff jitter in [0, 1); defaults to Math.random. */
  random?: () => number;
  /** For `Retry-After` dates and the retry budget; defaults to the system clock. */
  now?: () => Date;
}

/** Returns the configured language model; throws ConfigError naming LLM_MODEL or LLM_BASE_URL if a network provider lacks one. */
export function createLanguageModel(config: Config['llm'], deps: ModelDeps): LanguageModel {
  const sleep = deps.sleep ?? realSleep;
  if (config.provider === 'local') return createLocalModel({ sleep });

  const providerDeps = {
    fetch: deps.fetch ?? globalThis.fetch,
    sleep,
    random: deps.random ?? Math.random,
    now: deps.now ?? (() => new Date()),
    logger: deps.logger,
  };
  // loadConfig already refuses these; the checks keep the types honest for callers that build a config by hand.
  if (!config.model) throw new ConfigError('LLM_MODEL', `required when LLM_PROVIDER is ${config.provider}`);
  if (!config.baseUrl) throw new ConfigError('LLM_BASE_URL', `required when LLM_PROVIDER is ${config.provider}`);
  const settings = { ...config, baseUrl: config.baseUrl, model: config.model };
  return config.provider === 'openai' ? createOpenAiModel(settings, providerDeps) : createAnthropicModel(settings, providerDeps);
}
