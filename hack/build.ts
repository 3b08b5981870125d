// `npm run build`: what ships, bundled into dist/ (esbuild): the controller (dist/controller.mjs, the image's
// entry point) and the plugin (dist/kubectl-runpod.mjs, what bin/kubectl-runpod runs), sharing chunks,
// with the pod's scripts beside them (src/pod/render.ts reads them next to its own module).
// Why bundle, when Node runs the sources: resolving and loading ~1 000 modules one by one is most of a
// `kubectl runpod` command (measured: 1.0 -> 0.5 CPU-s and 150 -> 97 MiB peak RSS a command; the
// controller's start 1.2 -> 0.55 CPU-s), and the image and the plugin's archive need no node_modules.
// Lazy imports stay lazy: the S3 parts are their own chunks, loaded on first use.
import { build, type Metafile } from 'esbuild';
import { copyFileSync, globSync, mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';

const root = join(import.meta.dirname, '..');
export const distDir = join(root, 'dist');

/** What the bundle may leave to the runtime: Node's own modules, and ssh2's optional native parts (it
 * falls back to JavaScript without them, as in the image, which installs without build scripts). */
const OPTIONAL_NATIVE = ['cpu-features', '*.node'];

/** The entry points, each bundled to dist/<name>.mjs. */
export const ENTRY_POINTS = { controller: 'src/main.ts', 'kubectl-runpod': 'src/plugin/main.ts' };

export async function buildDist(outdir = distDir): Promise<Metafile> {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: Object.fromEntries(Object.entries(ENTRY_POINTS).map(([name, source]) => [name, join(root, source)])),
    outdir,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    external: OPTIONAL_NATIVE,
    // Bundled CommonJS packages (ssh2, the AWS SDK) still reach for require and __dirname.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url); const __filename = import.meta.filename; const __dirname = import.meta.dirname;",
    },
    outExtension: { '.js': '.mjs' },
    // Node keeps a module's source for as long as the module: dist/ is 9.8 MB of it as written, 5.5 MB
    // with whitespace and syntax minified. Not identifiers, so names survive (error types, stack frames,
    // constructor.name). An idle controller: 138-140 -> 108-115 MiB RSS (bench/idle.bench.ts). The maps
    // cost nothing until NODE_OPTIONS=--enable-source-maps turns a stack's bundle positions into source lines.
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: true,
    legalComments: 'eof',
    metafile: true,
    logLevel: 'warning',
  });
  mkdirSync(outdir, { recursive: true });
  for (const script of globSync(join(root, 'src/pod/*.sh'))) copyFileSync(script, join(outdir, basename(script)));
  return result.metafile;
}

if (import.meta.main) {
  const started = Date.now();
  const metafile = await buildDist();
  console.log(`dist/: ${Object.keys(metafile.outputs).length} files in ${Date.now() - started} ms`);
}
