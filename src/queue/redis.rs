//! The task queue on Redis: the same semantics as [`super::postgres`], with
//! every operation one Lua script (Redis runs scripts one at a time, so each
//! is atomic) and time taken from the server's clock.
//!
//! Keys, all under `tingshu:`: `task:ID` (hash: kind, priority, seq,
//! payload, state, attempts, max_attempts, due, worker, error, result,
//! remaining), `ready:P` (sorted sets of queued tasks by seq, one per
//! priority), `delayed` (queued tasks backing off, by due time), `running`
//! (by lease expiry), `waiting` and `parked` (sets), `deps:ID` / `rdeps:ID`
//! (what a task waits on / what waits on it), `jobs` and `job:NAME`.

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{RedisError, Script};
use async_trait::async_trait;

use super::{
    Claimed, EnqueueReport, JobPlan, JobStatus, QueueError, QueueTotals, TaskKind, TaskQueue,
    TaskState,
};

const PRELUDE: &str = r#"
local P = 'tingshu:'
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function make_ready(id)
  local f = redis.call('HMGET', P .. 'task:' .. id, 'priority', 'seq')
  redis.call('HSET', P .. 'task:' .. id, 'state', 'queued')
  redis.call('SREM', P .. 'waiting', id)
  redis.call('ZADD', P .. 'ready:' .. f[1], tonumber(f[2]), id)
end
"#;

const ENQUEUE: &str = r#"
-- ARGV: job, then per task: id, kind, priority, payload, max_attempts, ndeps, deps...
local job = ARGV[1]
redis.call('SADD', P .. 'jobs', job)
local i, added = 2, 0
while i <= #ARGV do
  local id, kind, prio, payload, max = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], ARGV[i+4]
  local ndeps = tonumber(ARGV[i+5])
  local key = P .. 'task:' .. id
  redis.call('SADD', P .. 'job:' .. job, id)
  local state = redis.call('HGET', key, 'state')
  if state == 'parked' then
    redis.call('SREM', P .. 'parked', id)
    redis.call('HSET', key, 'attempts', 0)
    make_ready(id)
    added = added + 1
  elseif not state then
    local seq = redis.call('INCR', P .. 'seq')
    local remaining = 0
    for d = 1, ndeps do
      local child = ARGV[i + 5 + d]
      redis.call('SADD', P .. 'deps:' .. id, child)
      redis.call('SADD', P .. 'rdeps:' .. child, id)
      if redis.call('HGET', P .. 'task:' .. child, 'state') ~= 'done' then
        remaining = remaining + 1
      end
    end
    redis.call('HSET', key, 'kind', kind, 'priority', prio, 'seq', seq, 'payload', payload,
      'attempts', 0, 'max_attempts', max, 'due', 0, 'remaining', remaining, 'state', 'waiting')
    if remaining == 0 then
      make_ready(id)
    else
      redis.call('SADD', P .. 'waiting', id)
    end
    added = added + 1
  end
  i = i + 6 + ndeps
end
return added
"#;

const CLAIM: &str = r#"
-- ARGV: worker, lease_ms
local now = now_ms()
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', now)) do
  redis.call('ZREM', P .. 'delayed', id)
  make_ready(id)
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', now)) do
  local key = P .. 'task:' .. id
  redis.call('ZREM', P .. 'running', id)
  local f = redis.call('HMGET', key, 'attempts', 'max_attempts', 'error')
  if tonumber(f[1]) >= tonumber(f[2]) then
    local err = 'its worker stopped responding ' .. f[1] .. ' times'
    if f[3] and f[3] ~= '' then err = err .. ' (last error: ' .. f[3] .. ')' end
    redis.call('HSET', key, 'state', 'parked', 'error', err)
    redis.call('SADD', P .. 'parked', id)
  else
    make_ready(id)
  end
end
for prio = 0, 2 do
  local popped = redis.call('ZPOPMIN', P .. 'ready:' .. prio)
  if #popped > 0 then
    local id = popped[1]
    local key = P .. 'task:' .. id
    local attempts = redis.call('HINCRBY', key, 'attempts', 1)
    local due = now + tonumber(ARGV[2])
    redis.call('HSET', key, 'state', 'running', 'worker', ARGV[1], 'due', due)
    redis.call('ZADD', P .. 'running', due, id)
    local f = redis.call('HMGET', key, 'kind', 'payload')
    return {id, f[1], f[2], attempts}
  end
end
return false
"#;

const HEARTBEAT: &str = r#"
-- ARGV: id, worker, lease_ms
local key = P .. 'task:' .. ARGV[1]
local f = redis.call('HMGET', key, 'state', 'worker')
if f[1] ~= 'running' or f[2] ~= ARGV[2] then return 0 end
local due = now_ms() + tonumber(ARGV[3])
redis.call('HSET', key, 'due', due)
redis.call('ZADD', P .. 'running', due, ARGV[1])
return 1
"#;

const COMPLETE: &str = r#"
-- ARGV: id, has_result, result
local id = ARGV[1]
local key = P .. 'task:' .. id
local f = redis.call('HMGET', key, 'state', 'priority')
if not f[1] then return redis.error_reply('no such task ' .. id) end
if f[1] == 'done' then return 0 end
redis.call('HSET', key, 'state', 'done', 'worker', '', 'error', '')
if ARGV[2] == '1' then redis.call('HSET', key, 'result', ARGV[3]) end
redis.call('ZREM', P .. 'running', id)
redis.call('ZREM', P .. 'delayed', id)
redis.call('ZREM', P .. 'ready:' .. f[2], id)
redis.call('SREM', P .. 'parked', id)
for _, parent in ipairs(redis.call('SMEMBERS', P .. 'rdeps:' .. id)) do
  local pkey = P .. 'task:' .. parent
  local left = redis.call('HINCRBY', pkey, 'remaining', -1)
  if left <= 0 and redis.call('HGET', pkey, 'state') == 'waiting' then
    make_ready(parent)
  end
end
return 1
"#;

const FAIL: &str = r#"
-- ARGV: id, worker, error, retry (1/0), backoff_ms
local id = ARGV[1]
local key = P .. 'task:' .. id
local f = redis.call('HMGET', key, 'state', 'worker', 'attempts', 'max_attempts')
if f[1] ~= 'running' or f[2] ~= ARGV[2] then return f[1] or 'running' end
redis.call('ZREM', P .. 'running', id)
redis.call('HSET', key, 'error', ARGV[3], 'worker', '')
if ARGV[4] == '1' and tonumber(f[3]) < tonumber(f[4]) then
  local due = now_ms() + tonumber(ARGV[5])
  redis.call('HSET', key, 'state', 'queued', 'due', due)
  redis.call('ZADD', P .. 'delayed', due, id)
  return 'queued'
end
redis.call('HSET', key, 'state', 'parked')
redis.call('SADD', P .. 'parked', id)
return 'parked'
"#;

const RESULTS: &str = r#"
-- ARGV: id
local found = {}
for _, child in ipairs(redis.call('SMEMBERS', P .. 'deps:' .. ARGV[1])) do
  local f = redis.call('HMGET', P .. 'task:' .. child, 'state', 'result', 'seq')
  if f[1] == 'done' and f[2] then table.insert(found, {tonumber(f[3]), f[2]}) end
end
table.sort(found, function(a, b) return a[1] < b[1] end)
local out = {}
for _, r in ipairs(found) do table.insert(out, r[2]) end
return out
"#;

const STATUS: &str = r#"
local jobs = redis.call('SMEMBERS', P .. 'jobs')
table.sort(jobs)
local out = {}
for _, job in ipairs(jobs) do
  local counts, parked = {}, {}
  for _, id in ipairs(redis.call('SMEMBERS', P .. 'job:' .. job)) do
    local f = redis.call('HMGET', P .. 'task:' .. id, 'kind', 'state', 'error', 'seq')
    if f[1] then
      local k = f[1] .. ' ' .. f[2]
      counts[k] = (counts[k] or 0) + 1
      if f[2] == 'parked' then table.insert(parked, {tonumber(f[4]), id, f[3] or ''}) end
    end
  end
  local flat = {}
  for k, n in pairs(counts) do table.insert(flat, k .. ' ' .. n) end
  table.sort(flat)
  table.sort(parked, function(a, b) return a[1] < b[1] end)
  local pflat = {}
  for i = 1, math.min(#parked, 5) do
    table.insert(pflat, parked[i][2])
    table.insert(pflat, parked[i][3])
  end
  table.insert(out, {job, flat, pflat})
end
return out
"#;

const TOTALS: &str = r#"
local active = redis.call('ZCARD', P .. 'delayed') + redis.call('ZCARD', P .. 'running')
for prio = 0, 2 do active = active + redis.call('ZCARD', P .. 'ready:' .. prio) end
return {active, redis.call('SCARD', P .. 'waiting'), redis.call('SCARD', P .. 'parked')}
"#;

/// A Redis-backed [`TaskQueue`].
pub struct RedisQueue {
    client: ::redis::Client,
    /// The connection; `None` after it broke (a reset, a server restart):
    /// the next operation connects again.
    connection: std::sync::Mutex<Option<MultiplexedConnection>>,
    enqueue: Script,
    claim: Script,
    heartbeat: Script,
    complete: Script,
    fail: Script,
    results: Script,
    status: Script,
    totals: Script,
}

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

fn rd(op: &'static str) -> impl FnOnce(RedisError) -> QueueError {
    move |e| QueueError::Backend {
        op,
        message: e.to_string(),
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl RedisQueue {
    pub async fn connect(url: &str) -> Result<RedisQueue, QueueError> {
        let connect_err = |e: RedisError| QueueError::Connect {
            url: super::redact(url),
            message: e.to_string(),
        };
        let client = ::redis::Client::open(url).map_err(|e| QueueError::BadUrl {
            url: super::redact(url),
            message: e.to_string(),
        })?;
        let connection = client
            .get_multiplexed_async_connection()
            .await
            .map_err(connect_err)?;
        Ok(RedisQueue {
            client,
            connection: std::sync::Mutex::new(Some(connection)),
            enqueue: script(ENQUEUE),
            claim: script(CLAIM),
            heartbeat: script(HEARTBEAT),
            complete: script(COMPLETE),
            fail: script(FAIL),
            results: script(RESULTS),
            status: script(STATUS),
            totals: script(TOTALS),
        })
    }
}

impl RedisQueue {
    /// The live connection, connecting again when the last one broke.
    async fn conn(&self) -> Result<MultiplexedConnection, QueueError> {
        if let Some(c) = self.slot().as_ref() {
            return Ok(c.clone());
        }
        let c = self
            .client
            .get_multiplexed_async_connection()
            .await
            .map_err(rd("reconnect"))?;
        tracing::info!("reconnected to the Redis queue");
        *self.slot() = Some(c.clone());
        Ok(c)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<MultiplexedConnection>> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Maps an error of `op`; a broken connection is dropped so that the
    /// next operation reconnects (tasks in hand stay safe under their
    /// leases meanwhile).
    fn failed(&self, op: &'static str) -> impl FnOnce(RedisError) -> QueueError + '_ {
        move |e| {
            if e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_timeout()
            {
                *self.slot() = None;
            }
            rd(op)(e)
        }
    }
}

#[async_trait]
impl TaskQueue for RedisQueue {
    async fn enqueue(&self, plan: &JobPlan) -> Result<EnqueueReport, QueueError> {
        let mut invocation = self.enqueue.prepare_invoke();
        invocation.arg(&plan.job);
        for task in &plan.tasks {
            invocation
                .arg(&task.id)
                .arg(task.kind.as_str())
                .arg(task.kind.priority())
                .arg(&task.payload)
                .arg(task.max_attempts.max(1))
                .arg(task.depends_on.len());
            for child in &task.depends_on {
                invocation.arg(child);
            }
        }
        let added: u64 = invocation
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("enqueue"))?;
        Ok(EnqueueReport {
            planned: plan.tasks.len(),
            added: added as usize,
        })
    }

    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<Claimed>, QueueError> {
        let claimed: Option<(String, String, String, u32)> = self
            .claim
            .arg(worker)
            .arg(ms(lease))
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("claim"))?;
        let Some((id, kind, payload, attempt)) = claimed else {
            return Ok(None);
        };
        let kind = TaskKind::parse(&kind).ok_or_else(|| QueueError::Corrupt {
            id: id.clone(),
            message: format!("unknown kind '{kind}'"),
        })?;
        Ok(Some(Claimed {
            id,
            kind,
            payload,
            attempt,
        }))
    }

    async fn heartbeat(&self, id: &str, worker: &str, lease: Duration) -> Result<bool, QueueError> {
        let renewed: i64 = self
            .heartbeat
            .arg(id)
            .arg(worker)
            .arg(ms(lease))
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("heartbeat"))?;
        Ok(renewed == 1)
    }

    async fn complete(&self, id: &str, result: Option<&str>) -> Result<(), QueueError> {
        let _: i64 = self
            .complete
            .arg(id)
            .arg(if result.is_some() { "1" } else { "0" })
            .arg(result.unwrap_or(""))
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("complete"))?;
        Ok(())
    }

    async fn fail(
        &self,
        id: &str,
        worker: &str,
        error: &str,
        retry: bool,
        backoff: Duration,
    ) -> Result<TaskState, QueueError> {
        let state: String = self
            .fail
            .arg(id)
            .arg(worker)
            .arg(error)
            .arg(if retry { "1" } else { "0" })
            .arg(ms(backoff))
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("record failure"))?;
        Ok(TaskState::parse(&state).unwrap_or(TaskState::Running))
    }

    async fn dependency_results(&self, id: &str) -> Result<Vec<String>, QueueError> {
        self.results
            .arg(id)
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("read results"))
    }

    async fn status(&self) -> Result<Vec<JobStatus>, QueueError> {
        let rows: Vec<(String, Vec<String>, Vec<String>)> = self
            .status
            .prepare_invoke()
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("status"))?;
        let mut jobs = Vec::new();
        for (job, counts, parked) in rows {
            let counts = counts
                .iter()
                .filter_map(|c| {
                    let mut parts = c.split(' ');
                    let kind = TaskKind::parse(parts.next()?)?;
                    let state = TaskState::parse(parts.next()?)?;
                    let n = parts.next()?.parse().ok()?;
                    Some((kind, state, n))
                })
                .collect();
            let parked = parked
                .chunks(2)
                .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone())))
                .collect();
            jobs.push(JobStatus {
                job,
                counts,
                parked,
            });
        }
        Ok(jobs)
    }

    async fn totals(&self) -> Result<QueueTotals, QueueError> {
        let (active, waiting, parked): (u64, u64, u64) = self
            .totals
            .prepare_invoke()
            .invoke_async(&mut self.conn().await?)
            .await
            .map_err(self.failed("totals"))?;
        Ok(QueueTotals {
            active,
            waiting,
            parked,
        })
    }
}
