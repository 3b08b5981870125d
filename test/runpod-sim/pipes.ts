// A container's stdout and stderr as Docker gives them: real pipes. Node's 'pipe' stdio is a socket
// pair, and a socket cannot be opened again through /proc/<pid>/fd/<n> (ENXIO), which a process in
// the container may do to write to the container's log (`echo x >/proc/1/fd/1`, as our job
// supervisor does). So each is a FIFO, unlinked once both ends are open: the write end is handed to
// the container, the read end is read here without blocking.
import { execFile } from 'node:child_process';
import { closeSync, constants, openSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface OutputPipe {
  /** The write end, for the child's stdio; closed here by closeWriteEnd() once the child has it. */
  writeFd: number;
  /** The read end: 'data' until every writer has closed it, then 'end'. */
  reader: net.Socket;
  closeWriteEnd(): void;
}

/** The container's stdout and stderr: both FIFOs made by one mkfifo (a spawn from the simulator costs a fork of it). */
export async function outputPipes(stdoutPath: string, stderrPath: string): Promise<[OutputPipe, OutputPipe]> {
  await run('mkfifo', ['-m', '0600', stdoutPath, stderrPath]);
  let stdout: OutputPipe;
  try {
    stdout = openPipe(stdoutPath);
  } catch (error) {
    unlinkSync(stderrPath);
    throw error;
  }
  try {
    return [stdout, openPipe(stderrPath)];
  } catch (error) {
    stdout.closeWriteEnd();
    stdout.reader.destroy();
    throw error;
  }
}

function openPipe(path: string): OutputPipe {
  let readFd: number | undefined;
  try {
    // The read end first and non-blocking, so the write end's open (blocking, as the child's writes
    // must be) finds a reader and returns at once.
    readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeFd = openSync(path, constants.O_WRONLY);
    const reader = new net.Socket({ fd: readFd, readable: true, writable: false });
    let open = true;
    return {
      writeFd,
      reader,
      closeWriteEnd: () => {
        if (open) closeSync(writeFd);
        open = false;
      },
    };
  } catch (error) {
    if (readFd !== undefined) closeSync(readFd);
    throw error;
  } finally {
    unlinkSync(path);
  }
}
