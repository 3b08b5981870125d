// What a crashed status write left: results committed to the run's store (the disk store's committed
// directory, or the run's SHA256SUMS in its bucket, written last, after verification) while the
// status records none. decide adopts them (obs.storedResults) rather than retrieving again.
import type { RunpodRun } from '../../api/runpodrun.ts';
import type { Logger } from '../../log.ts';
import type { S3StoreSettings } from '../../results/s3-settings.ts';
import { committedResults } from '../../results/store.ts';
import type { StoredResults } from '../decide/model.ts';
import { openS3Target } from '../ports/s3-access.ts';
import type { RunApi } from '../ports/run-api.ts';

export async function storedResultsOf(runs: RunApi, run: RunpodRun, s3: S3StoreSettings | undefined, location: string, logger: Logger): Promise<StoredResults | undefined> {
  if (!s3) {
    const found = await committedResults(location);
    return found && { files: found.files, bytes: found.bytes, location, verifiedAt: found.committedAt };
  }
  const opened = await openS3Target(runs, run.metadata.namespace, s3);
  if (!opened.ok) return undefined;
  try {
    // Loaded with the store's client (s3-access.ts), not with the controller.
    const { committedObjects } = await import('../../results/s3-verify.ts');
    const found = await committedObjects(opened.target);
    return found && { files: found.files, bytes: found.bytes, location, verifiedAt: found.committedAt, path: found.path };
  } catch (error) {
    // The retrieval step will meet the same store and say why in the status.
    logger.info({ run: run.metadata.name, namespace: run.metadata.namespace, err: error }, 'could not read the run\'s SHA256SUMS from its object store this time');
    return undefined;
  } finally {
    opened.target.client.destroy();
  }
}
