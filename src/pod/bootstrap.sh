#!/bin/sh
# runpod-operator bootstrap: what a pod runs first (the create call's args decode it from
# RUNPOD_OPERATOR_BOOTSTRAP and exec it).
#
# POSIX sh (tested under dash and bash --posix). Usage: bootstrap.sh SHELL — SHELL is the shell that
# runs the watchdog (e.g. "sh"); the watchdog's text is RUNPOD_OPERATOR_WATCHDOG, base64 (the args'
# stub already proved base64 works, by decoding this script).
#
# Steps: make the state directory (on the container's disk), claim the run directory, check the image, install the pinned host key and the client's
# authorized key, take port 22 from any sshd the image started, start ours, record the verdict, then
# exec the watchdog (which becomes the container's main process). Any failure is recorded (a fixed
# reason, never a secret) and the watchdog, exec'd with RUNPOD_OPERATOR_BOOT_FAILED set, deletes the
# pod at once.
# The file protocol shared with the controller is in protocol.md.
set -u
umask 077

RPO_SHELL=${1:-sh}
WATCHDOG=$(printf '%s' "${RUNPOD_OPERATOR_WATCHDOG:-}" | base64 -d 2>/dev/null) || WATCHDOG=''
# Neither script belongs in the job's env or sshd's (they are large and of no use there).
unset RUNPOD_OPERATOR_BOOTSTRAP RUNPOD_OPERATOR_WATCHDOG
RUN_DIR=${RUNPOD_OPERATOR_RUN_DIR:-/workspace/runpod-operator/run}
RUN_DIR=${RUN_DIR%/}
CLAIM=$RUN_DIR.claim
POD=${RUNPOD_OPERATOR_STATE_DIR:-/var/lib/runpod-operator/run}
POD_ID=${RUNPOD_POD_ID:-unknown}
SSH_ETC=/etc/ssh/runpod-operator
HOST_KEY_FILE=$SSH_ETC/host_key
SSHD_CONFIG=$SSH_ETC/sshd_config
# Checked, not assumed: the first six are the image contract; the rest are what these scripts
# and the controller's commands use. Plus an HTTP client for the watchdog (step 3).
REQUIRED='sh sshd sha256sum setsid tar base64 awk sed grep tr tail cat date sleep mkdir chmod mv rm'
NL='
'

log() {
  line="$(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null) bootstrap: $*"
  printf '%s\n' "$line"
  { printf '%s\n' "$line" >>"$POD/bootstrap.log"; } 2>/dev/null
}

put() {
  { printf '%s\n' "$2" >"$1.tmp" && mv -f "$1.tmp" "$1"; } 2>/dev/null
}

become_watchdog() {
  unset RUNPOD_OPERATOR_HOST_KEY
  RUNPOD_OPERATOR_RUN_DIR=$RUN_DIR
  RUNPOD_OPERATOR_STATE_DIR=$POD
  export RUNPOD_OPERATOR_RUN_DIR RUNPOD_OPERATOR_STATE_DIR
  if [ -z "$WATCHDOG" ]; then
    log 'FAILED: no watchdog was given; the pod cannot guard itself'
    put "$POD/watchdog" 'failed: no watchdog was given'
    exit 1
  fi
  # $RPO_SHELL is unquoted on purpose: "bash --posix" is a command and its option.
  # shellcheck disable=SC2086
  exec $RPO_SHELL -c "$WATCHDOG" runpod-operator-watchdog
}

fail() {
  log "FAILED: $1"
  put "$POD/bootstrap" "failed: $1"
  RUNPOD_OPERATOR_BOOT_FAILED=$1
  export RUNPOD_OPERATOR_BOOT_FAILED
  become_watchdog
}

now() {
  date +%s 2>/dev/null
}

# 1. The state directory first, on the container's own disk (never on /workspace, which may be a
# network volume shared with other pods): every later failure needs a place to be recorded. If it
# cannot be made, a pod-local one in /tmp still carries the verdict and the watchdog's log.
if ! mkdir -p "$POD" 2>/dev/null; then
  POD=/tmp/runpod-operator-state
  mkdir -p "$POD" 2>/dev/null
  fail "cannot create the state directory ${RUNPOD_OPERATOR_STATE_DIR:-}"
fi
chmod 700 "$POD" 2>/dev/null
# The run directory (the job's working files and results) is the run's own, named by its UID: runs
# sharing a network volume never meet.
if ! mkdir -p "$RUN_DIR" 2>/dev/null; then
  fail "cannot create the run directory $RUN_DIR"
fi
# 2. The claim on the run directory, beside it on the volume: "<pod id> <unix time>". Another pod's
# claim (an earlier attempt of the run: a network volume outlives pods) is taken over; taking it is
# exclusive (set -C), so of two pods booting at once only one wins and the loser fails its boot.
# The same pod again means the container restarted: its job died with the old container.
owner=''
if [ -f "$CLAIM" ]; then
  IFS= read -r owner <"$CLAIM" 2>/dev/null
fi
mine=''
if [ -f "$POD/pod" ]; then
  IFS= read -r mine <"$POD/pod" 2>/dev/null
fi
if [ "${owner%% *}" != "$POD_ID" ]; then
  if ! rm -f "$CLAIM" 2>/dev/null || ! (set -C && printf '%s\n' "$POD_ID $(now)" >"$CLAIM") 2>/dev/null; then
    fail "the run directory $RUN_DIR was claimed by another pod at the same time"
  fi
  if [ -n "$owner" ]; then
    log "took the run directory over from pod ${owner%% *}"
  fi
  # State under another pod's name (an image that ships one) is not this pod's.
  if [ "${mine%% *}" != "$POD_ID" ]; then
    rm -rf "${POD:?}"/* 2>/dev/null
    put "$POD/pod" "$POD_ID $(now)"
  fi
else
  log 'the container restarted'
  if [ "${mine%% *}" != "$POD_ID" ]; then
    # The state went with the container disk (Runpod wipes it on a restart): whether a job ran is
    # unknown, so it counts as started and lost, and none starts again on this pod.
    rm -rf "${POD:?}"/* 2>/dev/null
    put "$POD/pod" "$owner"
    log 'the job died with the previous container (its state went with the container disk; no job starts again)'
    put "$POD/job.started" "$(now)"
    put "$POD/job.lost" "$(now)"
  elif [ -e "$POD/job.started" ] && [ ! -e "$POD/job.exit" ] && [ ! -e "$POD/job.lost" ]; then
    log 'the job died with the previous container'
    put "$POD/job.lost" "$(now)"
  fi
fi
log "start: pod $POD_ID, run ${RUNPOD_OPERATOR_RUN:-?} attempt ${RUNPOD_OPERATOR_ATTEMPT:-?}, run directory $RUN_DIR, state directory $POD"
if ! rm -f "$POD/bootstrap" "$POD/watchdog" 2>/dev/null; then
  fail 'cannot remove a stale verdict'
fi

# 3. The image's requirements, all missing ones named at once.
missing=''
for tool in $REQUIRED; do
  if [ "$tool" = sshd ] && [ -x /usr/sbin/sshd ]; then
    continue
  fi
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
# The watchdog calls Runpod with curl, else python3, else GNU wget (BusyBox wget cannot send DELETE).
# Without one the pod cannot delete itself: that failure is recorded only once sshd runs (step 8), so
# that the controller can read why and delete the pod itself.
no_http=''
if ! command -v curl >/dev/null 2>&1 && ! python3 -c 'import urllib.request' >/dev/null 2>&1 &&
  ! { wget --version 2>/dev/null | grep -q 'GNU Wget'; }; then
  no_http='curl (or python3, or GNU wget): the watchdog cannot call Runpod'
fi
if [ -n "$missing" ]; then
  fail "the image lacks:$missing${no_http:+, and $no_http}"
fi
SSHD=/usr/sbin/sshd
[ -x "$SSHD" ] || SSHD=$(command -v sshd)

# 4. The pinned host key; the image's own host keys are never used (sshd gets only this one).
key=${RUNPOD_OPERATOR_HOST_KEY:-}
case $key in
  '') fail 'RUNPOD_OPERATOR_HOST_KEY is not set' ;;
  '{{'*) fail 'the host key secret was not resolved' ;;
esac
if ! mkdir -p "$SSH_ETC" 2>/dev/null || ! chmod 700 "$SSH_ETC" 2>/dev/null; then
  fail "cannot create $SSH_ETC"
fi
rm -f "$HOST_KEY_FILE" "$HOST_KEY_FILE.tmp" 2>/dev/null
if ! printf '%s' "$key" | base64 -d >"$HOST_KEY_FILE.tmp" 2>/dev/null; then
  rm -f "$HOST_KEY_FILE.tmp"
  fail 'the host key is not valid base64'
fi
first=''
IFS= read -r first <"$HOST_KEY_FILE.tmp" 2>/dev/null
case $first in
  '-----BEGIN '*'PRIVATE KEY-----') ;;
  *)
    rm -f "$HOST_KEY_FILE.tmp"
    fail 'the host key is not a private key'
    ;;
esac
if ! chmod 600 "$HOST_KEY_FILE.tmp" || ! mv -f "$HOST_KEY_FILE.tmp" "$HOST_KEY_FILE"; then
  fail 'cannot install the host key'
fi
unset key first
unset RUNPOD_OPERATOR_HOST_KEY

# 5. The client's key: exactly one public key line, no options (a line starting with options
# could run a forced command or open forwarding).
auth=${RUNPOD_OPERATOR_AUTHORIZED_KEY:-}
case $auth in
  *"$NL"*) fail 'RUNPOD_OPERATOR_AUTHORIZED_KEY holds more than one line' ;;
  ssh-ed25519' '?* | ssh-rsa' '?* | ecdsa-sha2-nistp*' '?* | sk-ssh-ed25519@openssh.com' '?* | sk-ecdsa-sha2-nistp256@openssh.com' '?*) ;;
  '') fail 'RUNPOD_OPERATOR_AUTHORIZED_KEY is not set' ;;
  *) fail 'RUNPOD_OPERATOR_AUTHORIZED_KEY is not an OpenSSH public key' ;;
esac
# sshd's StrictModes refuses keys under a group- or world-writable home.
chmod go-w /root 2>/dev/null
if ! mkdir -p /root/.ssh 2>/dev/null || ! chmod 700 /root/.ssh ||
  ! { printf '%s\n' "$auth" >/root/.ssh/authorized_keys.tmp; } 2>/dev/null ||
  ! chmod 600 /root/.ssh/authorized_keys.tmp || ! mv -f /root/.ssh/authorized_keys.tmp /root/.ssh/authorized_keys; then
  fail 'cannot install the authorized key'
fi

# 6. sshd on port 22 with our own configuration: only the pinned key, keys only, root by key.
listening22() {
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q '^ *[0-9]*: [0-9A-Fa-f]*:0016 [0-9A-Fa-f]*:[0-9A-Fa-f]* 0A '
}
# An image's start script (its ENTRYPOINT) may have started an sshd of its own, serving the image's
# host keys: whatever listens on 22 now is the image's, and it is stopped so that port 22 serves only
# the pinned key. The listener is found by its socket's inode (/proc/net/tcp*), its process by that
# inode among /proc/*/fd (POSIX `ls -l` shows a link's target). Never PID 1 or this shell.
stop_listeners22() {
  # Inodes are single words: a word loop is exactly right here (SC2013).
  # shellcheck disable=SC2013
  for inode in $(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$2 ~ /:0016$/ && $4 == "0A" { print $10 }'); do
    for fds in /proc/[0-9]*/fd; do
      pid=${fds#/proc/}
      pid=${pid%/fd}
      case $pid in 1 | "$$") continue ;; esac
      # POSIX has no readlink(1); `ls -l` of an fd directory shows each link's target (SC2010).
      # shellcheck disable=SC2010
      if ls -l "$fds" 2>/dev/null | grep -q "socket:\[$inode\]"; then
        log "stopping the image's own listener on port 22 (pid $pid)"
        kill "$1" "$pid" 2>/dev/null
      fi
    done
  done
}
if listening22; then
  stop_listeners22 -TERM
  tries=0
  while listening22 && [ "$tries" -lt 10 ]; do
    tries=$((tries + 1))
    [ "$tries" -eq 5 ] && stop_listeners22 -KILL
    sleep 1
  done
  if listening22; then
    fail 'port 22 is held by a process of the image that does not stop'
  fi
fi
if ! {
  printf '%s\n' 'Port 22' 'PermitRootLogin prohibit-password' 'PasswordAuthentication no' \
    'KbdInteractiveAuthentication no' 'PubkeyAuthentication yes' 'AuthorizedKeysFile .ssh/authorized_keys' \
    'StrictModes yes' 'X11Forwarding no' 'PrintMotd no' 'ClientAliveInterval 30' 'ClientAliveCountMax 4' \
    'MaxSessions 32' 'MaxStartups 32:30:64' 'Subsystem sftp internal-sftp' >"$SSHD_CONFIG"
} 2>/dev/null; then
  fail 'cannot write the sshd configuration'
fi
if ! mkdir -p /run/sshd 2>/dev/null || ! chmod 755 /run/sshd 2>/dev/null; then
  fail 'cannot create /run/sshd'
fi
if ! out=$("$SSHD" -t -f "$SSHD_CONFIG" -h "$HOST_KEY_FILE" -p 22 2>&1); then
  log "sshd -t: $(printf '%s' "$out" | tr '\n' ' ')"
  fail 'sshd rejects the host key or its configuration'
fi
# Without the pod key in its env (its sessions build their own env anyway).
(
  unset RUNPOD_API_KEY
  exec "$SSHD" -D -e -f "$SSHD_CONFIG" -h "$HOST_KEY_FILE" -p 22 \
    -o PasswordAuthentication=no -o PermitRootLogin=prohibit-password </dev/null
) &
sshd_pid=$!
tries=0
until listening22; do
  if ! kill -0 "$sshd_pid" 2>/dev/null; then
    fail 'sshd exited at start'
  fi
  tries=$((tries + 1))
  if [ "$tries" -ge 30 ]; then
    fail 'sshd does not listen on port 22'
  fi
  sleep 1
done
log "sshd listens on port 22 (pid $sshd_pid)"

# 7. The image's environment for the job (commands over SSH do not see PID 1's env), without the
# secrets: never the pod's API key, never the host key. awk's ENVIRON, not `export -p`, whose
# quoting differs between shells ($'...' in bash is not sh).
if ! {
  awk 'BEGIN {
    for (k in ENVIRON) {
      if (k !~ /^[A-Za-z_][A-Za-z0-9_]*$/) continue
      if (k ~ /^(RUNPOD_API_KEY|RUNPOD_OPERATOR_HOST_KEY|RUNPOD_OPERATOR_BOOT_FAILED|PWD|OLDPWD|SHLVL|_)$/) continue
      v = ENVIRON[k]
      gsub(/\047/, "\047\\\047\047", v)
      printf "export %s=\047%s\047\n", k, v
    }
  }' >"$POD/image.env.tmp" && mv -f "$POD/image.env.tmp" "$POD/image.env"
} 2>/dev/null; then
  fail 'cannot write the image environment'
fi

# 8. The verdict, then the watchdog.
if [ -n "$no_http" ]; then
  fail "the image lacks $no_http"
fi
if ! put "$POD/bootstrap" ok || [ ! -s "$POD/bootstrap" ]; then
  fail 'cannot record the bootstrap verdict'
fi
log 'ok: starting the watchdog'
become_watchdog
