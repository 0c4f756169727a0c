-- Argo CD health of a Strom FlinkJob (strom.io/v1beta1), read from the status the operator writes.
-- Install: argocd-cm key resource.customizations.health.strom.io_FlinkJob (charts/strom-operator/README.md).
-- Lua 5.1 (Argo CD runs gopher-lua). Tested against a fixture of every lifecycle state in
-- tests/operator/test_gitops_health.py; Flux's healthCheckExprs in examples/gitops/ agree with it.
--
-- Order matters. A Stalled or invalid FlinkJob is Degraded even before the operator has recorded the
-- latest generation (it may never record an invalid one). Then a generation the operator has not
-- observed is Progressing, whatever the previous generation's conditions say. Then failures, then work
-- in progress, then Suspended and Healthy.
local function result(status, message)
  return {status = status, message = message}
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return result("Progressing", "The FlinkJob is being deleted")
end
local st = obj.status
if st == nil then
  return result("Progressing", "Waiting for the Strom operator to report a status")
end

local conditions = {}
if st.conditions ~= nil then
  for _, c in ipairs(st.conditions) do
    if c.type ~= nil then
      conditions[c.type] = c
    end
  end
end

local function holds(kind, wanted)
  local c = conditions[kind]
  return c ~= nil and c.status == (wanted or "True")
end

local function says(kind, fallback)
  local c = conditions[kind]
  if c == nil then
    return fallback
  end
  local text = c.message
  if text == nil or text == "" then
    text = fallback
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason .. ": " .. text
  end
  return text
end

local function reason_of(kind)
  local c = conditions[kind]
  if c == nil then
    return nil
  end
  return c.reason
end

if holds("Stalled") then
  return result("Degraded", says("Stalled", "the operator cannot make progress"))
end
if holds("Degraded") and reason_of("Degraded") == "InvalidSpec" then
  return result("Degraded", says("Degraded", "the spec is invalid"))
end

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end
if generation ~= nil and st.observedGeneration ~= nil and st.observedGeneration ~= generation then
  return result("Progressing", "The operator has not yet observed generation " .. tostring(generation)
    .. " (last observed: " .. tostring(st.observedGeneration) .. ")")
end

local state = st.lifecycleState
if state == "FAILED" then
  return result("Degraded", st.error or says("Ready", "the job failed"))
end
if state == "ROLLED_BACK" then
  local why = st.error
  if st.reconciliation ~= nil and st.reconciliation.reason ~= nil then
    why = st.reconciliation.reason
  end
  return result("Degraded", "Rolled back to the last stable spec: " .. (why or "the new spec did not run"))
end
-- A batch driver that failed with a retry scheduled is on its way again: not a failure yet.
if holds("Degraded") and reason_of("Degraded") ~= "DriverFailed" then
  return result("Degraded", says("Degraded", "degraded"))
end
-- A failure to act that only the user can fix (RBAC, admission, an invalid object, the S3 credentials):
-- the operator retries, but the next try fails the same way. Unreachable APIs or S3 are retried: Progressing.
local needs_user = {Forbidden = true, Invalid = true, AdmissionDenied = true, NotFound = true,
  S3AccessDenied = true, S3CredentialsMissing = true}
if holds("Ready", "False") and needs_user[reason_of("Ready") or ""] then
  return result("Degraded", says("Ready", "the operator cannot act"))
end
local progressing_reason = reason_of("Progressing")
if holds("Progressing", "False") and (progressing_reason == "DeploymentTimeout"
    or progressing_reason == "SavepointFailed") then
  return result("Degraded", says("Progressing", "the deployment did not progress"))
end

if holds("Reconciling") then
  return result("Progressing", says("Reconciling", "reconciling"))
end
if holds("Progressing") then
  return result("Progressing", says("Progressing", "progressing"))
end
if holds("Degraded") then
  return result("Progressing", says("Degraded", "retrying"))
end
if state == "SUSPENDED" then
  return result("Suspended", says("Ready", "the job is suspended"))
end
if holds("Ready") then
  return result("Healthy", says("Ready", "the job is running"))
end
return result("Progressing", says("Ready", "Waiting for the job to run"))
