import { MastraModelConfig } from '@mastra/core/llm';
import { AppConfig } from '../config/config';
import { ScriptedModel } from './scripted-model';

/** Turns a model id from configuration into what Mastra takes: the scripted model, an OpenAI-compatible server, or a Mastra model-router id. */
export function resolveModel(modelId: string, config: AppConfig['model']): MastraModelConfig {
  if (modelId === 'scripted') return new ScriptedModel();
  if (config.openaiBaseUrl) {
    const slash = modelId.indexOf('/');
    return {
      providerId: modelId.slice(0, slash),
      modelId: modelId.slice(slash + 1),
      url: config.openaiBaseUrl,
      apiKey: config.openaiApiKey ?? 'not-needed',
    };
  }
  return modelId;
}
