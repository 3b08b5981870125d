-- Argo CD health check for runpod-operator.dev/RunpodRun (argocd-cm key
-- resource.customizations.health.runpod-operator.dev_RunpodRun). Argo CD runs it with gopher-lua
-- (Lua 5.1) in a sandbox of the base functions, table and a safe os: keep to 5.1 syntax and use no
-- string library. It reads the global `obj` and returns hs = {status, message}.
-- A run is a batch job: Healthy once it succeeded, Degraded when it failed, Suspended when it was
-- cancelled (spec.cancel), Progressing while the controller works on it or has not caught up.
local hs = {}
local status = obj.status

-- "Failed/JobFailed: the job exited with code 3; ...": phase, reason (when it says more), message.
local function summary()
  local head = status.phase
  if status.reason ~= nil and status.reason ~= status.phase then head = head .. "/" .. status.reason end
  if status.message ~= nil and status.message ~= "" then return head .. ": " .. status.message end
  return head
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "the run is being deleted; its pods are deleted first"
  return hs
end
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the controller to pick up the run"
  return hs
end
local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local phase = status.phase
if phase == "Succeeded" then
  hs.status = "Healthy"
elseif phase == "Failed" and status.reason == "Cancelled" then
  hs.status = "Suspended"
elseif phase == "Failed" then
  hs.status = "Degraded"
else
  -- Pending, Provisioning, Running, Retrieving, and any phase newer than this script.
  hs.status = "Progressing"
end
hs.message = summary()
return hs
