import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { getProviderConfig, MastraModelConfig, parseModelString } from '@mastra/core/llm';
import { AppConfig } from '../config/config';
import { ScriptedModel } from './scripted-model';

/**
 * Turns a model id from configuration into what Mastra takes: the scripted model, a chat model of
 * the OpenAI-compatible server at OPENAI_BASE_URL, or a Mastra model-router id. The server's model
 * asks for usage (`stream_options.include_usage`): Mastra's own router for a URL does not.
 */
export function resolveModel(modelId: string, config: AppConfig['model']): MastraModelConfig {
  if (modelId === 'scripted') return new ScriptedModel();
  if (config.openaiBaseUrl) {
    const slash = modelId.indexOf('/');
    return createOpenAICompatible({
      name: modelId.slice(0, slash),
      baseURL: config.openaiBaseUrl,
      apiKey: config.openaiApiKey ?? 'not-needed',
      includeUsage: true,
    }).chatModel(modelId.slice(slash + 1));
  }
  return modelId;
}

/**
 * Why a model id cannot serve (an unknown provider, or a model its provider does not list), or
 * undefined: refused at start-up, where every run would otherwise fail. With OPENAI_BASE_URL the
 * server decides what its models are.
 */
export function modelProblem(modelId: string, config: AppConfig['model']): string | undefined {
  if (modelId === 'scripted' || config.openaiBaseUrl) return undefined;
  const { provider, modelId: model } = parseModelString(modelId);
  const known = provider ? getProviderConfig(provider) : undefined;
  if (!provider || !known) {
    return `'${modelId}' names no provider Mastra knows (such as openai, anthropic, google); for an OpenAI-compatible server set OPENAI_BASE_URL`;
  }
  const models = [
    ...(known.models ?? []),
    ...((known as { deprecatedModels?: string[] }).deprecatedModels ?? []),
  ];
  if (models.length && !models.includes(model)) {
    return `${provider} has no model '${model}' (e.g. ${models.slice(0, 3).join(', ')})`;
  }
  return undefined;
}
