// The outside judges of a RunpodRun's health: Argo CD's resource-health Lua check
// (deploy/argocd/health.lua) run by Debian's lua5.4 and by gopher-lua (the interpreter Argo CD embeds,
// through test/kstatus/argocd-lua), and kstatus (sigs.k8s.io/cli-utils, as Flux and kpt use it, through
// test/kstatus). Each takes a batch of objects and answers one verdict per object, in order, from one process.
import { execFile, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';

export const healthLuaPath = join(import.meta.dirname, '..', '..', 'deploy', 'argocd', 'health.lua');
const buildKstatusScript = join(import.meta.dirname, '..', 'envtest', 'build-kstatus.sh');
/** Debian's lua5.4; Argo CD itself runs gopher-lua (5.1), which the script keeps to. */
const luaInterpreter = process.env.LUA ?? 'lua5.4';

const verdict = z.object({ status: z.string(), message: z.string() });
export type Verdict = z.output<typeof verdict>;
const goVerdict = verdict.extend({ error: z.string().optional() });

/** A JSON value as a Lua expression: objects and arrays become tables (arrays 1-based), null is nil. */
export function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'string') {
    // JSON's escapes are Lua's, except \uXXXX, which Lua writes \u{XXXX}.
    return JSON.stringify(value).replace(/\\u([0-9a-fA-F]{4})/g, '\\u{$1}');
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`not a JSON number: ${value}`);
    return String(value);
  }
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(', ')}}`;
  if (typeof value === 'object') {
    const fields = Object.entries(value).map(([key, field]) => `[${luaLiteral(key)}] = ${luaLiteral(field)}`);
    return `{${fields.join(', ')}}`;
  }
  throw new Error(`not a JSON value: ${typeof value}`);
}

// Loads health.lua as Argo CD does (a chunk that sees the global `obj` and returns hs) once per
// object, and prints each hs as one JSON line. The chunk gets what Argo CD's sandbox opens (the base
// functions, table, a safe os; no string library, not even as methods on strings), so a script that
// leans on more fails here as it would in Argo CD.
const luaDriver = `
local path, objects = ...
local file = assert(io.open(path, "r"))
local source = file:read("a")
file:close()
local gsub, format, byte = string.gsub, string.format, string.byte
local function quote(s)
  return '"' .. gsub(tostring(s), '[%c"\\\\]', function(c) return format("\\\\u%04x", byte(c)) end) .. '"'
end
local function sandbox(object)
  local env = { obj = object, table = table, unpack = table.unpack,
    os = { time = os.time, date = os.date, clock = os.clock, difftime = os.difftime } }
  for _, name in ipairs({ "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print", "rawequal",
      "rawget", "rawlen", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "xpcall" }) do
    env[name] = _G[name]
  end
  env._G = env
  return env
end
local stringMethods = getmetatable("").__index
for i = 1, #objects do
  local chunk = assert(load(source, "=health.lua", "t", sandbox(objects[i])))
  getmetatable("").__index = nil
  local ok, hs = pcall(chunk)
  getmetatable("").__index = stringMethods
  assert(ok, hs)
  assert(type(hs) == "table", "health.lua must return a table")
  io.write('{"status":', quote(hs.status), ',"message":', quote(hs.message), '}\\n')
end
`;

export async function judgeWithLua(objects: unknown[]): Promise<Verdict[]> {
  const program = `local objects = {${objects.map(luaLiteral).join(',\n')}}\n`
    + `local run = assert(load(${luaLiteral(luaDriver)}, "=driver", "t"))\nrun(${luaLiteral(healthLuaPath)}, objects)\n`;
  const out = await runWithInput(luaInterpreter, ['-'], program);
  return parseLines(out, objects.length, verdict, luaInterpreter);
}

let judgesBuilt: Promise<string> | undefined;

/** Builds (once per machine, cached) the Go judges; resolves to the directory that holds them. */
export function goJudges(): Promise<string> {
  judgesBuilt ??= promisify(execFile)('bash', [buildKstatusScript], { maxBuffer: 1 << 20 })
    .then(({ stdout }) => dirname(stdout.trim()));
  return judgesBuilt;
}

export async function judgeWithKstatus(objects: unknown[]): Promise<Verdict[]> {
  return judgeWithGo('kstatus-judge', [], objects);
}

/** health.lua in gopher-lua, set up as Argo CD sets it up. */
export async function judgeWithArgoCdLua(objects: unknown[]): Promise<Verdict[]> {
  return judgeWithGo('argocd-lua-judge', [healthLuaPath], objects);
}

async function judgeWithGo(judge: string, args: string[], objects: unknown[]): Promise<Verdict[]> {
  const binary = join(await goJudges(), judge);
  const out = await runWithInput(binary, args, objects.map((o) => JSON.stringify(o)).join('\n'));
  return parseLines(out, objects.length, goVerdict, judge).map(({ status, message, error }) => {
    if (error) throw new Error(`${judge} could not judge an object: ${error}`);
    return { status, message };
  });
}

function parseLines<T>(out: string, expected: number, schema: z.ZodType<T>, who: string): T[] {
  const lines = out.split('\n').filter((line) => line !== '');
  if (lines.length !== expected) throw new Error(`${who} answered ${lines.length} verdicts for ${expected} objects:\n${out}`);
  return lines.map((line) => schema.parse(JSON.parse(line)));
}

function runWithInput(command: string, args: string[], input: string): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    child.once('error', (error) => fail(new Error(`${command} could not be started (${error.message}); is it installed?`)));
    child.once('close', (code) => (code === 0 ? done(stdout) : fail(new Error(`${command} exited ${code}: ${stderr}`))));
    child.stdin.end(input);
  });
}
