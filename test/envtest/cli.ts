// `npm run envtest -- up --dir DIR` starts etcd + kube-apiserver in the background, writes an admin
// kubeconfig at DIR/kubeconfig and returns once the CRDs are served; `down --dir DIR` ends them.
import { parseArgs } from 'node:util';
import { startControlPlane, stopControlPlane } from './harness.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { dir: { type: 'string' }, crds: { type: 'string' } },
});
const [command] = positionals;
if ((command !== 'up' && command !== 'down') || !values.dir) {
  console.error('usage: npm run envtest -- up|down --dir DIR [--crds CRD_DIR]');
  process.exit(2);
}
if (command === 'up') {
  const started = Date.now();
  const plane = await startControlPlane({ dir: values.dir, crdDir: values.crds, detached: true });
  console.log(`envtest: API server ${plane.server} ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  console.log(`envtest: kubectl --kubeconfig ${plane.kubeconfigPath} get rpr`);
} else {
  await stopControlPlane(values.dir);
  console.log(`envtest: stopped and removed ${values.dir}`);
}
