#!/bin/sh
# runpod-operator watchdog: the pod's own guard against billing past its run.
#
# POSIX sh (tested under dash and bash --posix). The bootstrap execs it, so it is the container's
# main process: it must never exit while the pod should live (Runpod restarts a container whose main
# process ends, and keeps billing). It deletes its own pod with the pod-scoped RUNPOD_API_KEY that
# Runpod injects, and logs every decision to watchdog.log in its state directory and stdout (Runpod's pod logs).
# The file protocol it shares with the controller is in protocol.md.
#
# No set -e: a failing command must not end the guard. Every number is checked before arithmetic,
# because a bad $(( )) ends a non-interactive shell. No heredocs and no multi-line strings: the
# renderer strips comments and indentation line by line.
set -u
umask 077

RUN_DIR=${RUNPOD_OPERATOR_RUN_DIR:-/workspace/runpod-operator/run}
# Its state and inputs: on the container's own disk, never on a volume another pod may mount.
POD=${RUNPOD_OPERATOR_STATE_DIR:-/var/lib/runpod-operator/run}
API=${RUNPOD_OPERATOR_API_URL:-https://api.runpod.io/v2}
API=${API%/}
POD_ID=${RUNPOD_POD_ID:-}
BOOT_FAILED=${RUNPOD_OPERATOR_BOOT_FAILED:-}
UA=runpod-operator-watchdog/1
NL='
'

is_uint() {
  case $1 in
    '' | *[!0-9]*) return 1 ;;
  esac
  return 0
}

is_decimal() {
  case $1 in
    '' | .* | *. | *.*.* | *[!0-9.]*) return 1 ;;
  esac
  return 0
}

# A setting in whole seconds; a bad value falls back to the default (and is logged at start).
uint_or() {
  if is_uint "$1"; then printf '%s' "$1"; else printf '%s' "$2"; fi
}

PERIOD=$(uint_or "${RUNPOD_OPERATOR_WATCHDOG_PERIOD:-}" 10)
[ "$PERIOD" -ge 1 ] 2>/dev/null || PERIOD=10
BOOT_GRACE=$(uint_or "${RUNPOD_OPERATOR_BOOT_GRACE:-}" 1800)
RETRIEVE_GRACE=$(uint_or "${RUNPOD_OPERATOR_RETRIEVE_GRACE:-}" 3600)
VERDICT_BOUND=$(uint_or "${RUNPOD_OPERATOR_VERDICT_BOUND:-}" 300)
DEADLINE=${RUNPOD_OPERATOR_DEADLINE:-}
MAX_COST=${RUNPOD_OPERATOR_MAX_COST_USD:-}
KEEP_ENV=${RUNPOD_OPERATOR_KEEP_POD:-0}
DEADLINE_BAD=0
if [ -n "$DEADLINE" ] && ! is_uint "$DEADLINE"; then DEADLINE_BAD=1; fi
COST_BAD=0
if [ -n "$MAX_COST" ] && ! is_decimal "$MAX_COST"; then COST_BAD=1; fi

# Two clocks. NOW is the pod's `date`, the clock of the pod's own files (job.ended, job.started, pod).
# RUNPOD_NOW is Runpod's, NOW plus CLOCK_SKEW, and the rules are judged on it: the deadline (the
# controller's clock, NTP-kept like Runpod's) and createdAt (Runpod's) directly, the graces from the
# watchdog's start and the job's end put on it when first seen (START_R, ENDED_R), so a community host
# hours off neither deletes early nor bills late, and a later step of its clock moves nothing. The skew
# comes from the Date header of Runpod's answers (every api call: learn_clock), not from an offset the
# controller would write over SSH: it is known from the probe on, before any SSH (the deadline counts from
# boot); it is the very clock createdAt is on; and a job (root on the pod) can write a file, never Runpod's
# answers, so it cannot postpone the deadline. No answer with a Date yet: 0, the pod's clock as it is.
CLOCK_SKEW=0
CLOCK_READ_AT=''
LAST_NOW=0
now() {
  t=$(date +%s 2>/dev/null)
  if is_uint "$t"; then LAST_NOW=$t; else LAST_NOW=$((LAST_NOW + PERIOD)); fi
  NOW=$LAST_NOW
  uptime_s
  track_clock "$NOW" "$UP"
  RUNPOD_NOW=$((NOW + CLOCK_SKEW))
}

# UP: whole seconds since the host booted (/proc/uptime), which no step of the wall clock moves; '' when unreadable.
uptime_s() {
  UP=''
  u=''
  { read -r u _ </proc/uptime; } 2>/dev/null
  u=${u%%.*}
  if is_uint "$u"; then UP=$u; fi
}

# A reading $1 of the pod's clock at uptime $2. When the clock moved more than the time that passed
# since the last reading (NTP, a host's clock set hours off), every pod-clock time held in memory moves
# with it, and the skew the other way (Runpod's time did not step): a step between the watchdog's start
# and the probe's answer, or within one tick, moves no grace, wait or deadline. Whole seconds on both
# sides: up to 2 s is rounding, so the skew is taken 2 s low (Runpod's time never later than it is)
# until the next tick reads it again. Without an uptime, only what the Date header teaches is known.
CLOCK_AT=''
UP_AT=''
CLOCK_STEPPED=0
CLOCK_UNCONFIRMED=0
track_clock() {
  if [ -n "$2" ] && [ -n "$UP_AT" ]; then
    st=$((($1 - CLOCK_AT) - ($2 - UP_AT)))
    if [ "$st" -gt 2 ] || [ "$st" -lt -2 ]; then
      CLOCK_STEPPED=1
      CLOCK_UNCONFIRMED=1
      START=$((START + st))
      PROBE_AT=$((PROBE_AT + st))
      PRICE_AT=$((PRICE_AT + st))
      CLOCK_SKEW=$((CLOCK_SKEW - st - 2))
      [ -z "$CLOCK_READ_AT" ] || CLOCK_READ_AT=$((CLOCK_READ_AT + st))
      [ -z "$DELETED_AT" ] || DELETED_AT=$((DELETED_AT + st))
      [ -z "$REFUSED_AT" ] || REFUSED_AT=$((REFUSED_AT + st))
      [ -z "$ENDED_SEEN" ] || ENDED_SEEN=$((ENDED_SEEN + st))
      log "clock: the pod's clock stepped by $st s (the host's uptime says so); the times held here move with it"
    fi
  fi
  CLOCK_AT=$1
  UP_AT=$2
}

log() {
  line="$(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null) watchdog: $*"
  printf '%s\n' "$line"
  { printf '%s\n' "$line" >>"$POD/watchdog.log"; } 2>/dev/null
}

# Writes a one-line file atomically (a reader never sees half of it).
put() {
  { printf '%s\n' "$2" >"$1.tmp" && mv -f "$1.tmp" "$1"; } 2>/dev/null
}

# First line of a file if it is a whole number, else nothing.
read_uint() {
  v=''
  if [ -f "$1" ]; then
    IFS= read -r v <"$1" 2>/dev/null
  fi
  if is_uint "$v"; then printf '%s' "$v"; fi
}

# The HTTP client: curl, else python3 (urllib), else GNU wget (BusyBox wget cannot send DELETE).
# None: the watchdog cannot call Runpod (the bootstrap reports it; the controller deletes the pod).
NO_HTTP='the image lacks curl (or python3, or GNU wget): the watchdog cannot call Runpod'
HTTP=''
if command -v curl >/dev/null 2>&1; then
  HTTP=curl
elif python3 -c 'import urllib.request' >/dev/null 2>&1; then
  HTTP=python3
elif wget --version 2>/dev/null | grep -q 'GNU Wget'; then
  HTTP=wget
fi

# Each prints the answer's headers (CRLF lines, then a blank line), the body, a newline and the HTTP
# status. The key reaches curl through its config on stdin and python3 through its env (never argv or a
# log line); wget reads headers only from argv or a regular file, so it gets a 0600 file in a private
# tmpfs directory that lives for the call. Redirects are never followed with the key; 10 s timeouts.
http_curl() {
  printf 'header = "Authorization: Bearer %s"\n' "$RUNPOD_API_KEY" |
    curl -s -D - --max-time 10 -K - -A "$UA" -X "$1" -H 'Accept: application/json' \
      ${3+-H 'Content-Type: application/json' --data "$3"} -w "$NL%{http_code}" "$API$2" 2>/dev/null
}
http_python3() {
  python3 -c 'import os,sys,urllib.request as u;a=sys.argv;P=type("P",(u.HTTPErrorProcessor,),{"http_response":lambda s,q,r:r,"https_response":lambda s,q,r:r});d=a[4].encode() if len(a)>4 else None;h={"Authorization":"Bearer "+os.environ["RUNPOD_API_KEY"],"Accept":"application/json","User-Agent":a[1]};h.update({"Content-Type":"application/json"} if d else {});r=u.build_opener(P).open(u.Request(a[3],data=d,headers=h,method=a[2]),timeout=10);sys.stdout.write("".join(k+": "+v+"\r\n" for k,v in r.headers.items())+"\r\n"+r.read().decode("utf-8","replace")+"\n"+str(r.status))' \
    "$UA" "$1" "$API$2" ${3+"$3"} 2>/dev/null
}
http_wget() {
  d=''
  for t in /dev/shm /tmp; do
    rm -rf "$t/runpod-operator-wget.$$" 2>/dev/null
    if mkdir -m 700 "$t/runpod-operator-wget.$$" 2>/dev/null; then d=$t/runpod-operator-wget.$$; break; fi
  done
  [ -n "$d" ] || return 90
  { printf 'header = Authorization: Bearer %s\n' "$RUNPOD_API_KEY" >"$d/rc"; } 2>/dev/null
  h=$(wget --config="$d/rc" -O "$d/body" -S --content-on-error --max-redirect=0 --tries=1 --timeout=10 -U "$UA" \
    --method="$1" --header='Accept: application/json' ${3+--header='Content-Type: application/json' --body-data="$3"} "$API$2" 2>&1 >/dev/null)
  w=$?
  rm -f "$d/rc"
  c=$(printf '%s\n' "$h" | sed -n 's/^ *HTTP\/[0-9.]* \([0-9][0-9][0-9]\).*/\1/p' | tail -n 1)
  b=$(cat "$d/body" 2>/dev/null)
  rm -rf "$d"
  printf '%s\n' "$h" | sed -n 's/^  *\([A-Za-z][A-Za-z0-9-]*:\)/\1/p' | tr -d '\r' | while IFS= read -r l; do printf '%s\r\n' "$l"; done
  printf '\r\n%s\n%s' "$b" "${c:-000}"
  return $w
}

# Whole seconds of a Retry-After header among the headers on stdin (an HTTP date is not used: backoff instead).
retry_after() {
  tr -d '\r' | tr '[:upper:]' '[:lower:]' | sed -n 's/^retry-after:[[:space:]]*\([0-9][0-9]*\)[[:space:]]*$/\1/p' | tail -n 1
}

# api METHOD PATH [JSON]: sets API_CODE (000 = no answer), API_RC (the client's exit code), API_HEADERS
# (LF lines), API_BODY and API_RETRY_AFTER (whole seconds, or nothing); learns Runpod's time from the
# answer's Date header.
api() {
  API_CODE=000
  API_RC=0
  API_BODY=''
  API_RETRY_AFTER=''
  API_HEADERS=''
  # shellcheck disable=SC1003
  case ${RUNPOD_API_KEY:-} in
    '' | *'"'* | *'\'* | *"$NL"*)
      API_RC=-1
      return 1
      ;;
  esac
  ck_before=$(date +%s 2>/dev/null)
  uptime_s
  ck_up_before=$UP
  case $HTTP in
    curl) resp=$(http_curl "$@") ;;
    python3) resp=$(http_python3 "$@") ;;
    wget) resp=$(http_wget "$@") ;;
    *)
      API_RC=-2
      return 1
      ;;
  esac
  API_RC=$?
  ck_after=$(date +%s 2>/dev/null)
  uptime_s
  ck_up_after=$UP
  API_HEADERS=$(answer_part headers)
  API_RETRY_AFTER=$(printf '%s\n' "$API_HEADERS" | retry_after)
  code=$(answer_part code)
  case $code in
    [0-9][0-9][0-9]) API_CODE=$code ;;
  esac
  API_BODY=$(answer_part body)
  [ "$API_CODE" != 000 ] || return 1
  learn_clock "$ck_before" "$ck_after" "$ck_up_before" "$ck_up_after"
  return 0
}

# One part of the answer in $resp (headers, a blank line, the body, then the status code on a line of
# its own), each in one pass of awk: GET /pods/{id} carries the pod's env, scripts included (some 60 KB),
# and a shell pattern over that (${resp##*...}) cost dash seconds of CPU per call. The headers are those
# before the last blank line (curl also prints a proxy's or a 100-continue's block before the answer's).
answer_part() {
  printf '%s\n' "$resp" | awk -v part="$1" '
    { line[NR] = $0; if ($0 == "\r") sep = NR }
    END {
      if (part == "code") { print line[NR]; exit }
      from = 1; to = sep - 1
      if (part == "body") { from = sep + 1; to = NR - 1 }
      for (i = from; i <= to; i++) { l = line[i]; if (part == "headers") sub(/\r$/, "", l); print l }
    }'
}

# Why the last call failed, in words (never the key).
api_failure() {
  if [ "$API_RC" = -1 ]; then
    printf 'RUNPOD_API_KEY is missing or malformed'
  elif [ "$API_RC" = -2 ]; then
    printf '%s' "$NO_HTTP"
  elif [ "$API_CODE" = 000 ]; then
    printf 'no answer from %s (%s exit %s)' "$API" "$HTTP" "$API_RC"
  else
    printf 'HTTP %s' "$API_CODE"
  fi
}

# A top-level JSON number or string field of the pod (the answer is one object; env values are
# JSON strings, so their quotes are escaped and cannot fake a field).
json_number() {
  printf '%s' "$API_BODY" | tr -d '\n' |
    sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\\([0-9][0-9.eE+-]*\\).*/\\1/p"
}
json_string() {
  printf '%s' "$API_BODY" | tr -d '\n' |
    sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p"
}

# Unix seconds of an ISO 8601 UTC time (2026-03-13T20:00:00.123Z), if this date can read it.
iso_to_unix() {
  d=$(printf '%s' "$1" | sed -n 's/^\([0-9][0-9-]*\)[T ]\([0-9][0-9:]*\).*/\1 \2/p')
  [ -n "$d" ] || return 1
  u=$(date -u -d "$d" +%s 2>/dev/null)
  is_uint "$u" && printf '%s' "$u"
}

# Unix seconds of an HTTP date (RFC 9110 IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT), if this date can read it.
http_date_to_unix() {
  ck_d=$(printf '%s' "$1" | sed -n 's/^[A-Za-z]*, *\([0-9][0-9]*\) \([A-Za-z][a-z][a-z]\) \([0-9][0-9][0-9][0-9]\) \([0-9][0-9]:[0-9][0-9]:[0-9][0-9]\) GMT.*/\3 \2 \1 \4/p')
  set -f
  # shellcheck disable=SC2086
  set -- $ck_d
  set +f
  [ "$#" = 4 ] || return 1
  case $2 in
    Jan) ck_m=01 ;; Feb) ck_m=02 ;; Mar) ck_m=03 ;; Apr) ck_m=04 ;; May) ck_m=05 ;; Jun) ck_m=06 ;;
    Jul) ck_m=07 ;; Aug) ck_m=08 ;; Sep) ck_m=09 ;; Oct) ck_m=10 ;; Nov) ck_m=11 ;; Dec) ck_m=12 ;;
    *) return 1 ;;
  esac
  iso_to_unix "$1-$ck_m-$3T$4Z"
}

# learn_clock BEFORE AFTER: the skew of the pod's clock (read just before and after the call) from the
# answer's Date (Runpod's clock, whole seconds). The skew then lies within (Date - AFTER - 1,
# Date + 1 - BEFORE): 0 when that span holds 0 (the clocks agree as far as one answer can tell), else
# its low end, so that Runpod's time is never taken for later than it is: the deadline and the cap are
# never judged early, and late by at most the call's time and two seconds.
learn_clock() {
  is_uint "$1" && is_uint "$2" || return 0
  # The tick's NOW becomes the reading after the answer, so NOW and the skew are on one clock even when
  # it stepped since the tick began; a reading across a step proves nothing about the skew.
  NOW=$2
  LAST_NOW=$2
  track_clock "$2" "$4"
  RUNPOD_NOW=$((NOW + CLOCK_SKEW))
  [ "$2" -ge "$1" ] || return 0
  if [ -n "$3" ] && [ -n "$4" ] && [ $((($2 - $1) - ($4 - $3))) -gt 2 ]; then return 0; fi
  ck_date=$(printf '%s\n' "$API_HEADERS" | sed -n 's/^[Dd][Aa][Tt][Ee]:[[:space:]]*//p' | tail -n 1)
  ck_r=$(http_date_to_unix "$ck_date")
  is_uint "$ck_r" || return 0
  ck_s=$((ck_r - $2 - 1))
  if [ "$ck_s" -lt 0 ] && [ $((ck_r + 1 - $1)) -gt 0 ]; then ck_s=0; fi
  ck_change=$((ck_s - CLOCK_SKEW))
  CLOCK_SKEW=$ck_s
  CLOCK_READ_AT=$2
  RUNPOD_NOW=$((NOW + CLOCK_SKEW))
  # Said when it changed, and once after a step the uptime showed (the reading that confirms it).
  if [ "$ck_change" -gt 2 ] || [ "$ck_change" -lt -2 ] || [ "$CLOCK_UNCONFIRMED" = 1 ]; then
    CLOCK_UNCONFIRMED=0
    if [ "$ck_s" -gt 0 ]; then
      log "clock: the pod's clock is $ck_s s behind Runpod's (its Date header); the deadline and the cost cap count on Runpod's time"
    elif [ "$ck_s" -lt 0 ]; then
      log "clock: the pod's clock is $((-ck_s)) s ahead of Runpod's (its Date header); the deadline and the cost cap count on Runpod's time"
    else
      log "clock: the pod's clock agrees with Runpod's again"
    fi
  fi
}

PREV_NOW=''
# Reads Runpod's time again (a GET of the pod; any answer with a Date is a reading) when the pod's clock
# stepped since the last tick (NTP, a host's clock set: a tick is PERIOD long plus its calls), or when the
# last reading is 15 minutes old (a clock drifts). Until an answer comes the skew is the last one learned
# (moved by a step the uptime showed).
clock_check() {
  ck_prev=$PREV_NOW
  PREV_NOW=$NOW
  ck_stepped=$CLOCK_STEPPED
  CLOCK_STEPPED=0
  [ -n "$HTTP" ] && [ "$VERDICT" = ok ] && { [ -n "$CLOCK_READ_AT" ] || [ "$ck_stepped" = 1 ]; } || return 0
  if [ -n "$ck_prev" ] && { [ "$NOW" -lt "$ck_prev" ] || [ $((NOW - ck_prev)) -gt $((PERIOD + 40)) ]; }; then
    log "clock: the pod's clock stepped (from $ck_prev to $NOW in one tick); reading Runpod's time again"
  elif [ "$ck_stepped" = 0 ] && [ "$NOW" -ge "$CLOCK_READ_AT" ] && [ $((NOW - CLOCK_READ_AT)) -lt 900 ]; then
    return 0
  fi
  api GET "/pods/$POD_ID"
}

COST=''
CREATED=''
VERDICT=''

# What makes a probe pointless (nothing changes it while the pod lives): the verdict fails at once.
probe_config() {
  if [ -z "$POD_ID" ]; then
    VERDICT='failed: RUNPOD_POD_ID is not set'
  else
    case $POD_ID in
      *[!A-Za-z0-9_-]*) VERDICT='failed: RUNPOD_POD_ID is malformed' ;;
    esac
  fi
  if [ -z "$VERDICT" ] && [ -z "$HTTP" ]; then VERDICT="failed: $NO_HTTP"; fi
}

# One GET of its own pod with the pod key: 0 = this pod (its price and creation time learned), 1 = no
# good answer, 2 = another pod answered. A price of 0 or none is unknown, never a price (API-NOTES §3:
# the spec says 0.0 when EXITED; a create answer may lack it): COST stays empty.
read_pod() {
  api GET "/pods/$POD_ID"
  [ "$API_CODE" = 200 ] || return 1
  printf '%s' "$API_BODY" | tr -d '\n' | grep -q "\"id\"[[:space:]]*:[[:space:]]*\"$POD_ID\"" || return 2
  c=$(json_number cost)
  [ -n "$c" ] || c=$(json_number costPerHr)
  if [ -n "$c" ] && awk -v c="$c" 'BEGIN { exit !(c > 0) }'; then COST=$c; fi
  c=$(json_string createdAt)
  u=$(iso_to_unix "$c")
  [ -z "$u" ] || CREATED=$u
  return 0
}

PROBE_AT=0
PROBE_TRIES=0
PROBE_WAIT=$PERIOD
PROBE_REFUSED=1

# The readiness probe, one try when due, beside the rules (the deadline holds while it waits): it proves
# the pod key can read its own pod. Lags (a GET lags a create like the list, API-NOTES S6: 404), blips
# and 429s are tried again (Retry-After, else a backoff of one to three periods) until the verdict bound
# (the controller waits that long after readiness, and a little more); then it fails, as refused only
# when every answer was 401/403.
probe_step() {
  [ -z "$VERDICT" ] && [ "$NOW" -ge "$PROBE_AT" ] || return 0
  PROBE_TRIES=$((PROBE_TRIES + 1))
  read_pod
  case $? in
    0) VERDICT=ok ;;
    2) VERDICT="failed: GET /pods/$POD_ID answered another pod" ;;
    *)
      case $API_CODE in
        401 | 403) ;;
        *) PROBE_REFUSED=0 ;;
      esac
      if [ "$API_RC" = -1 ] || [ "$API_RC" = -2 ]; then
        VERDICT="failed: GET /pods/$POD_ID: $(api_failure)"
      elif [ $((NOW - START)) -ge "$VERDICT_BOUND" ]; then
        if [ "$PROBE_REFUSED" = 1 ]; then
          VERDICT="failed: GET /pods/$POD_ID: $(api_failure) throughout $VERDICT_BOUND s ($PROBE_TRIES tries)"
        else
          VERDICT="failed: GET /pods/$POD_ID: $(api_failure) after $PROBE_TRIES tries in $VERDICT_BOUND s"
        fi
      else
        w=${API_RETRY_AFTER:-$PROBE_WAIT}
        [ "$w" -ge 1 ] || w=1
        PROBE_WAIT=$((PROBE_WAIT * 2))
        [ "$PROBE_WAIT" -le $((PERIOD * 3)) ] || PROBE_WAIT=$((PERIOD * 3))
        PROBE_AT=$((NOW + w))
        [ "$PROBE_AT" -le $((START + VERDICT_BOUND)) ] || PROBE_AT=$((START + VERDICT_BOUND))
        log "probe: GET /pods/$POD_ID: $(api_failure); trying again in $((PROBE_AT - NOW)) s"
      fi
      ;;
  esac
  [ -n "$VERDICT" ] && verdict_reached
}

# The verdict is final: recorded for the controller, and with ok, what the cost cap counts from.
verdict_reached() {
  # The probe's answers taught the skew: the boot grace counts from the start on Runpod's clock.
  START_R=$((START + CLOCK_SKEW))
  put "$POD/watchdog" "$VERDICT"
  log "verdict: $VERDICT"
  [ "$VERDICT" = ok ] || return 0
  if [ -z "$CREATED" ]; then
    # The API's createdAt was unreadable: the first bootstrap of this pod (its pod file) is the next best
    # start, else this watchdog's. A job running as root can write that file too (before a container restart): it may
    # make the pod look older (costlier), never younger than this watchdog's own start.
    CREATED=$START
    p=''
    [ -f "$POD/pod" ] && IFS= read -r p <"$POD/pod" 2>/dev/null
    p=${p##* }
    is_uint "$p" && [ "$p" -lt "$START" ] && CREATED=$p
    # Both are the pod's clock; createdAt is Runpod's.
    CREATED=$((CREATED + CLOCK_SKEW))
  fi
  if [ -n "$MAX_COST" ]; then
    if [ -n "$COST" ]; then
      log "cost cap: \$$MAX_COST at \$$COST/h from $CREATED"
    else
      log "cost cap: \$$MAX_COST: Runpod reports no price for the pod yet; read again every period, and the pod is deleted at the boot grace ($BOOT_GRACE s) if it stays unknown"
    fi
  fi
}

PRICE_AT=0

# The price, while the cost cap needs it and Runpod has not reported one: one GET per period (after a
# 429, its Retry-After), within the pod key's own quota.
price_step() {
  [ "$VERDICT" = ok ] && [ -n "$MAX_COST" ] && [ -z "$COST" ] && [ "$NOW" -ge "$PRICE_AT" ] || return 0
  read_pod
  if [ -n "$COST" ]; then
    log "cost cap: \$$MAX_COST at \$$COST/h from $CREATED (the price arrived)"
  fi
  PRICE_AT=$((NOW + ${API_RETRY_AFTER:-$PERIOD}))
}

# Under a cost cap, a price still unknown at the boot grace: a cap nobody can enforce is no cap (the
# controller does not start a job on such a pod either).
price_unknown() {
  [ -n "$MAX_COST" ] && [ -z "$COST" ] && [ $((NOW - START)) -ge "$BOOT_GRACE" ]
}

DELETED_AT=''
REFUSED_AT=''

# The pod is gone after this answer (404: it was gone already).
gone() {
  case $API_CODE in
    2?? | 404) return 0 ;;
  esac
  return 1
}

# The key may not do this (as against "not now": no answer, 408, 429, 5xx), or no call can be made.
refused() {
  case $API_CODE in
    401 | 403) return 0 ;;
  esac
  [ "$API_RC" = -1 ] || [ "$API_RC" = -2 ]
}

# Deletes the pod for rule $1 (reason $2): DELETE, else the terminate action. When the key may do
# neither (API-NOTES: "delete permission varies by deployment"), stop: the GPUs are released, only
# the disk bills. A delete that failed is recorded in watchdog.delete ("<rule> <unix> <why>"),
# which the controller reads to delete the pod itself at once. Transient failures are retried every
# period, refusals every 30 s; nothing waits on a delete that cannot happen.
delete_pod() {
  # (A clock stepped back holds no delete back.)
  if [ -n "$DELETED_AT" ] && [ "$NOW" -ge "$DELETED_AT" ] && [ $((NOW - DELETED_AT)) -lt 30 ]; then
    return 0
  fi
  if [ -n "$REFUSED_AT" ] && [ "$NOW" -ge "$REFUSED_AT" ] && [ $((NOW - REFUSED_AT)) -lt 30 ]; then
    return 1
  fi
  log "deleting the pod: $2"
  if [ -z "$POD_ID" ]; then
    log 'cannot delete: RUNPOD_POD_ID is not set'
    put "$POD/watchdog.delete" "$1 $NOW RUNPOD_POD_ID is not set"
    REFUSED_AT=$NOW
    return 1
  fi
  if [ -z "$HTTP" ]; then
    log "cannot delete: $NO_HTTP"
    put "$POD/watchdog.delete" "$1 $NOW $NO_HTTP"
    REFUSED_AT=$NOW
    return 1
  fi
  api DELETE "/pods/$POD_ID"
  if gone; then
    log "deleted: DELETE /pods/$POD_ID answered $API_CODE"
    DELETED_AT=$NOW
    return 0
  fi
  why="DELETE: $(api_failure)"
  both=0
  refused && both=1
  log "DELETE /pods/$POD_ID failed: $(api_failure); trying the terminate action"
  api POST "/pods/$POD_ID/action" '{"action":"terminate"}'
  if gone; then
    log "deleted: terminate answered $API_CODE"
    DELETED_AT=$NOW
    return 0
  fi
  why="$why; terminate: $(api_failure)"
  refused || both=0
  if [ "$both" = 0 ]; then
    put "$POD/watchdog.delete" "$1 $NOW $why"
    log "terminate failed: $(api_failure); trying again in $PERIOD s"
    return 1
  fi
  # Recorded first: a stop that works ends this container (and this watchdog) with it.
  put "$POD/watchdog.delete" "$1 $NOW $why; stopping the pod"
  log "the pod key may not delete the pod ($why); stopping it, so that only its disk bills until the controller deletes it"
  api POST "/pods/$POD_ID/action" '{"action":"stop"}'
  if gone; then
    log "stopped: stop answered $API_CODE"
  else
    why="$why; stop: $(api_failure)"
    put "$POD/watchdog.delete" "$1 $NOW $why"
    log "stop failed: $(api_failure); the controller must delete the pod; trying again in 30 s"
  fi
  REFUSED_AT=$NOW
  return 1
}

# keep: the keep file decides when present ("0" = not kept, anything else = kept), else the create env.
kept() {
  if [ -f "$POD/keep" ]; then
    k=''
    IFS= read -r k <"$POD/keep" 2>/dev/null
    [ "$k" != 0 ]
    return
  fi
  case $KEEP_ENV in
    1 | true) return 0 ;;
  esac
  return 1
}

ENDED_SEEN=''
# The job's end on Runpod's clock, as first seen: a later step of the pod's clock does not move it.
ENDED_R=''
# The last tick that saw the job running, on Runpod's clock.
RUNNING_R=''

# The job ended: its exit code is recorded, it was lost with a container restart, or its
# supervisor died without recording one.
job_ended() {
  [ -e "$POD/job.exit" ] && return 0
  [ -e "$POD/job.lost" ] && return 0
  sup=$(read_uint "$POD/job.supervisor")
  if [ -z "$sup" ]; then
    # No supervisor a minute after the start: it never ran.
    st=$(read_uint "$POD/job.started")
    [ -n "$st" ] && [ $((NOW - st)) -ge 60 ]
    return
  fi
  [ "$sup" -gt 1 ] && ! kill -0 "$sup" 2>/dev/null
}

# ENDED_R, when first seen: job.ended (the pod's clock when written) moved by the skew now known, but
# not before the last tick that saw the job running, nor after now: a step of the pod's clock between
# the writing and this tick would move it by the step (2 h ahead just after the end put it 2 h in the
# past, the grace over at once). A watchdog that never saw the job running (it restarted after the
# end) has no floor: the grace is not granted twice.
first_seen_end() {
  [ -z "$ENDED_R" ] || return 0
  ENDED_R=$(($(ended_at) + CLOCK_SKEW))
  [ -z "$RUNNING_R" ] || [ "$ENDED_R" -ge "$RUNNING_R" ] || ENDED_R=$RUNNING_R
  [ "$ENDED_R" -le "$RUNPOD_NOW" ] || ENDED_R=$RUNPOD_NOW
}

ended_at() {
  e=$(read_uint "$POD/job.ended")
  [ -n "$e" ] || e=$(read_uint "$POD/job.lost")
  [ -n "$e" ] || e=$ENDED_SEEN
  printf '%s' "$e"
}

# CREATED is Runpod's createdAt: the spend counts on Runpod's clock.
over_cost() {
  [ -n "$MAX_COST" ] && [ -n "$COST" ] && [ -n "$CREATED" ] || return 1
  awk -v c="$COST" -v s="$((RUNPOD_NOW - CREATED))" -v m="$MAX_COST" 'BEGIN { exit !(c * s / 3600 >= m) }'
}

spent() {
  awk -v c="$COST" -v s="$((RUNPOD_NOW - CREATED))" 'BEGIN { printf "%.4f", c * s / 3600 }'
}

EXTENDED_SEEN=''

# The controller extends the retrieve grace while the results wait for a transfer slot or move: the
# file retrieve.until holds "<unix until>" on this pod's clock, renewed as long as the controller is
# there; a controller that is gone renews nothing, and the grace ends at the last until. It extends
# only the retrieve grace: the deadline and the cost cap come first in decide.
grace_extended() {
  u=$(read_uint "$POD/retrieve.until")
  [ -n "$u" ] && [ "$NOW" -lt "$u" ] || return 1
  if [ -z "$EXTENDED_SEEN" ]; then
    log "the retrieve grace is extended by the controller while the results wait for a transfer (until $u, renewed as it goes)"
  fi
  EXTENDED_SEEN=$u
  return 0
}

# The first reason to delete the pod now, or nothing; RULE names it in one word for the controller.
REASON=''
RULE=''
decide() {
  REASON=''
  RULE=''
  if [ -n "$BOOT_FAILED" ]; then
    RULE=bootstrap
    REASON="the bootstrap failed: $BOOT_FAILED"
    return
  fi
  # Once seen, a job exists even if a careless job removes the state afterwards.
  job=$SEEN_JOB
  [ -e "$POD/job.started" ] && job=1
  if [ "$DEADLINE_BAD" = 1 ]; then
    RULE=config
    REASON="RUNPOD_OPERATOR_DEADLINE is not a unix time: $DEADLINE"
    return
  fi
  if [ "$COST_BAD" = 1 ]; then
    RULE=config
    REASON="RUNPOD_OPERATOR_MAX_COST_USD is not a decimal amount: $MAX_COST"
    return
  fi
  if [ -n "$DEADLINE" ] && [ "$RUNPOD_NOW" -ge "$DEADLINE" ]; then
    RULE=deadline
    REASON="the deadline passed (deadline $DEADLINE, now $RUNPOD_NOW on Runpod's clock, $NOW on the pod's)"
    return
  fi
  if over_cost; then
    RULE=cost-cap
    REASON="the cost cap was reached (spent about \$$(spent) at \$$COST/h, cap \$$MAX_COST)"
    return
  fi
  if price_unknown; then
    RULE=price-unknown
    REASON="the cost cap (\$$MAX_COST) cannot be enforced: Runpod reported no price for the pod within the boot grace ($BOOT_GRACE s)"
    return
  fi
  # keepPod (and the keep file, which a job running as root can write too) exempts only from what follows the job's
  # end: the deadline and the cost cap above are absolute, and come only from the create env.
  if [ "$job" = 1 ] && kept; then
    return
  fi
  if [ -e "$POD/retrieved" ]; then
    RULE=retrieved
    REASON='the results were retrieved'
    return
  fi
  if [ "$job" = 1 ] && job_ended; then
    [ -n "$ENDED_SEEN" ] || ENDED_SEEN=$NOW
    e=$(ended_at)
    first_seen_end
    if [ $((RUNPOD_NOW - ENDED_R)) -ge "$RETRIEVE_GRACE" ] && ! grace_extended; then
      RULE=retrieve-grace
      REASON="the job ended at $e and its results were not retrieved within $RETRIEVE_GRACE s"
    fi
    return
  fi
  if [ "$job" = 0 ] && [ $((RUNPOD_NOW - START_R)) -ge "$BOOT_GRACE" ]; then
    RULE=boot-grace
    REASON="no job started within $BOOT_GRACE s of the watchdog's start"
  fi
}

# Logs what changed since the last tick, so the log tells the story without a line per tick.
SEEN_JOB=0
SEEN_END=0
SEEN_KEEP=''
observe() {
  if [ "$SEEN_JOB" = 0 ] && [ -e "$POD/job.started" ]; then
    SEEN_JOB=1
    log "the job started (at $(read_uint "$POD/job.started"))"
  fi
  if [ "$SEEN_JOB" = 1 ] && [ "$SEEN_END" = 0 ] && job_ended; then
    SEEN_END=1
    [ -n "$ENDED_SEEN" ] || ENDED_SEEN=$NOW
    first_seen_end
    x=$(read_uint "$POD/job.exit")
    if [ -n "$x" ]; then
      log "the job ended with exit code $x; the pod is deleted $RETRIEVE_GRACE s after that unless kept or retrieved"
    else
      log "the job ended without an exit code (lost); the pod is deleted $RETRIEVE_GRACE s after that unless kept or retrieved"
    fi
  elif [ "$SEEN_JOB" = 1 ] && [ "$SEEN_END" = 0 ]; then
    RUNNING_R=$RUNPOD_NOW
  fi
  k=0
  kept && k=1
  if [ "$k" != "$SEEN_KEEP" ]; then
    if [ "$k" = 1 ]; then
      log 'keepPod: the pod is kept once its job exists (until its deadline or cost cap, or a failed bootstrap)'
    elif [ -n "$SEEN_KEEP" ]; then
      log 'keepPod: off; every rule applies again'
    fi
    SEEN_KEEP=$k
  fi
}

# While the probe waits, the loop wakes for its next try (never past the verdict bound).
nap() {
  s=$PERIOD
  if [ -z "$VERDICT" ]; then
    w=$((PROBE_AT - NOW))
    [ "$w" -ge 1 ] || w=1
    [ "$w" -ge "$s" ] || s=$w
  fi
  sleep "$s"
}

# The watchdog itself: set up, then one tick per period for as long as the pod lives.
watch() {
  now
  START=$NOW
  # The start on Runpod's clock (once the probe taught the skew), for the boot grace.
  START_R=$START
  { mkdir -p "$POD"; } 2>/dev/null

  log "start: pod ${POD_ID:-?} http=${HTTP:-none} run_dir=$RUN_DIR state_dir=$POD deadline=${DEADLINE:-none} max_cost_usd=${MAX_COST:-none} boot_grace=$BOOT_GRACE retrieve_grace=$RETRIEVE_GRACE verdict_bound=$VERDICT_BOUND keep=$KEEP_ENV period=$PERIOD api=$API"

  if [ -n "$BOOT_FAILED" ]; then
    VERDICT="failed: the bootstrap failed: $BOOT_FAILED"
  else
    probe_config
  fi
  [ -n "$VERDICT" ] && verdict_reached

  while :; do
    now
    # Before this tick's calls: a reading they make is later than NOW, which would look like a clock stepped back.
    clock_check
    probe_step
    price_step
    observe
    decide
    if [ -n "$REASON" ]; then
      delete_pod "$RULE" "$REASON"
    fi
    nap
  done
}

# The rules' tests source this file under the name below: its functions are defined and nothing runs.
# On the pod it always runs ($0 is runpod-operator-watchdog: bootstrap.sh).
[ "$0" = runpod-operator-watchdog-rules ] || watch
