// The official TypeScript SDK client (@modelcontextprotocol/sdk, the copy
// installed beside server-everything), with its default options, calling a
// session's MCP endpoint as a task. It prints one JSON line per thing it
// sees, for the Go test that runs it (web/mcp_tasks_test.go).
//
//   node mcp_tasks_client.mjs <endpoint> <token> wait|cancel <tool> <message>
//
// wait:   callToolStream until the result (the test approves after 60 s).
// cancel: callToolStream; on the task, tasks/get then tasks/cancel; the
//         stream then ends cancelled; tasks/list at the end.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.SUBAKO_TS_SDK; // .../node_modules/@modelcontextprotocol/sdk
const load = rel => import(pathToFileURL(path.join(sdk, 'dist/esm', rel)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const [endpoint, token, mode, tool, message] = process.argv.slice(2);
const out = v => process.stdout.write(JSON.stringify(v) + '\n');
const err = e => ({ code: e?.code, message: String(e?.message ?? e) });

const client = new Client({ name: 'ts-tasks', version: '1.32.2' });
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
out({ type: 'connected', protocolVersion: transport.protocolVersion, capability: client.getServerCapabilities()?.tasks ?? null });
const { tools } = await client.listTools(); // the client learns which tools take tasks
out({ type: 'tools', taskTools: tools.filter(t => t.execution?.taskSupport === 'optional').map(t => t.name) });

const started = Date.now();
let last = '';
for await (const m of client.experimental.tasks.callToolStream({ name: tool, arguments: { message } })) {
  const at = Date.now() - started;
  switch (m.type) {
    case 'taskCreated':
      out({ type: 'taskCreated', at, task: m.task });
      if (mode === 'cancel') {
        out({ type: 'getTask', task: await client.experimental.tasks.getTask(m.task.taskId) });
        out({ type: 'cancelTask', task: await client.experimental.tasks.cancelTask(m.task.taskId) });
        try {
          await client.experimental.tasks.cancelTask(m.task.taskId);
          out({ type: 'cancelAgain', ok: true });
        } catch (e) {
          out({ type: 'cancelAgain', error: err(e) });
        }
      }
      break;
    case 'taskStatus': {
      const key = m.task.status + '|' + (m.task.statusMessage ?? '');
      if (key !== last) {
        out({ type: 'taskStatus', at, task: m.task });
        last = key;
      }
      break;
    }
    case 'result':
      out({ type: 'result', at, result: m.result });
      break;
    case 'error':
      out({ type: 'error', at, error: err(m.error) });
      break;
  }
}
const listed = await client.experimental.tasks.listTasks();
out({ type: 'listTasks', tasks: listed.tasks });
await client.close();
out({ type: 'done' });
