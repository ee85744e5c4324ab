import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { calculatorTool, currentTimeTool, publishNoteTool } from '../mastra/tools/server-tools';
import { ScriptedModel } from './scripted-model';
import { builtInDefinitions } from './built-in-agents';

const agent = (config: Partial<ConstructorParameters<typeof Agent>[0]>) =>
  new Agent({ id: 'tutor', name: 'Tutor', instructions: 'Teach.', model: new ScriptedModel(), ...config });

const project = (...agents: Array<ReturnType<typeof agent>>) =>
  new Mastra({ agents: Object.fromEntries(agents.map((a) => [a.id, a])), logger: false });

describe('the built-in agents, read from the Mastra project of src/mastra', () => {
  it('are its agents, with their tools and default options', async () => {
    const [assistant, calculator] = await builtInDefinitions();
    expect(assistant).toMatchObject({ id: 'assistant', name: 'Assistant' });
    expect(assistant.instructions).toMatch(/^You are a helpful assistant/);
    expect(assistant.tools).toEqual([currentTimeTool, calculatorTool, publishNoteTool]);
    expect(assistant.defaults).toBeUndefined();
    expect(calculator).toMatchObject({
      id: 'calculator',
      tools: [calculatorTool],
      defaults: { maxSteps: 4, modelSettings: { temperature: 0 } },
    });
  });

  it('takes an agent added to the project as it is written', async () => {
    const tutor = agent({
      description: 'Explains arithmetic.',
      tools: { calculate: calculatorTool },
      defaultOptions: { maxSteps: 5, modelSettings: { temperature: 0.2, maxOutputTokens: 300 } },
    });
    expect(await builtInDefinitions(project(tutor))).toEqual([
      {
        id: 'tutor',
        name: 'Tutor',
        description: 'Explains arithmetic.',
        instructions: 'Teach.',
        tools: [calculatorTool],
        defaults: { maxSteps: 5, modelSettings: { temperature: 0.2, maxOutputTokens: 300 } },
      },
    ]);
  });

  it('refuses instructions that are not a string, a tool listed under another name, and tools that need a caller', async () => {
    await expect(
      builtInDefinitions(project(agent({ instructions: { role: 'system', content: 'Teach.' } }))),
    ).rejects.toThrow("src/mastra: agent 'tutor': a built-in agent's instructions are a string");
    await expect(builtInDefinitions(project(agent({ tools: { calc: calculatorTool } })))).rejects.toThrow(
      "src/mastra: agent 'tutor': tool 'calculate' is listed as 'calc'",
    );
    const perCaller = agent({
      tools: ({ requestContext }) => {
        if (!requestContext.get('caller')) throw new Error('no caller');
        return { calculate: calculatorTool };
      },
    });
    await expect(builtInDefinitions(project(perCaller))).rejects.toThrow(
      "src/mastra: agent 'tutor': a built-in agent's tools are listed without a request context",
    );
  });
});
