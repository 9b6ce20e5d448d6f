//! The task queue on PostgreSQL (sqlx, `FOR UPDATE SKIP LOCKED`).
//!
//! Three tables: `tingshu_tasks` (one row per task, keyed by its content
//! hash), `tingshu_deps` (which task waits on which) and `tingshu_job_tasks`
//! (which job asked for a task, for status). Claiming skips rows other
//! workers hold, so any number of workers poll one table without blocking
//! each other. The transactions that change dependencies — enqueueing and
//! completing — take one transaction-level advisory lock, so a task waiting
//! on several others is readied exactly once, by whichever transaction
//! completes the last of them; they are short (a few statements), so the
//! lock costs little next to a synthesis request.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::{Postgres, Row, Transaction};

use super::{
    Claimed, EnqueueReport, JobPlan, JobStatus, QueueError, QueueTotals, TaskKind, TaskQueue,
    TaskState,
};

/// Advisory lock key serializing dependency changes ("tingshu" in ASCII).
const DEPENDENCY_LOCK: i64 = 0x0074_696e_6773_6875;
/// Advisory lock key serializing schema creation.
const SCHEMA_LOCK: i64 = DEPENDENCY_LOCK + 1;

const SCHEMA: [&str; 7] = [
    "CREATE TABLE IF NOT EXISTS tingshu_tasks (
        id TEXT PRIMARY KEY,
        seq BIGSERIAL NOT NULL,
        kind TEXT NOT NULL,
        priority INT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INT NOT NULL DEFAULT 0,
        max_attempts INT NOT NULL,
        due TIMESTAMPTZ NOT NULL DEFAULT now(),
        worker TEXT,
        error TEXT,
        result TEXT,
        updated TIMESTAMPTZ NOT NULL DEFAULT now()
    )",
    "CREATE INDEX IF NOT EXISTS tingshu_tasks_ready
        ON tingshu_tasks (priority, seq) WHERE state IN ('queued', 'running')",
    // Lost-lease checks and counts by state, without scanning done work.
    "CREATE INDEX IF NOT EXISTS tingshu_tasks_state ON tingshu_tasks (state, due)",
    "CREATE TABLE IF NOT EXISTS tingshu_deps (
        parent TEXT NOT NULL,
        child TEXT NOT NULL,
        PRIMARY KEY (parent, child)
    )",
    "CREATE INDEX IF NOT EXISTS tingshu_deps_child ON tingshu_deps (child)",
    "CREATE TABLE IF NOT EXISTS tingshu_job_tasks (
        job TEXT NOT NULL,
        task TEXT NOT NULL,
        PRIMARY KEY (job, task)
    )",
    "CREATE INDEX IF NOT EXISTS tingshu_job_tasks_task ON tingshu_job_tasks (task)",
];

/// Readies waiting tasks among `$1` whose dependencies are all done.
const PROMOTE: &str = "UPDATE tingshu_tasks p SET state = 'queued', due = now(), updated = now()
    WHERE p.id = ANY($1) AND p.state = 'waiting'
      AND NOT EXISTS (
        SELECT 1 FROM tingshu_deps d JOIN tingshu_tasks c ON c.id = d.child
        WHERE d.parent = p.id AND c.state <> 'done')";

/// A PostgreSQL-backed [`TaskQueue`].
pub struct PgQueue {
    pool: PgPool,
}

fn pg(op: &'static str) -> impl FnOnce(sqlx::Error) -> QueueError {
    move |e| QueueError::Backend {
        op,
        message: e.to_string(),
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A driver message on one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl PgQueue {
    /// Connects with a pool of at most `connections` and creates the
    /// tables when missing.
    pub async fn connect(url: &str, connections: u32) -> Result<PgQueue, QueueError> {
        let options: sqlx::postgres::PgConnectOptions =
            url.parse().map_err(|e: sqlx::Error| QueueError::BadUrl {
                url: super::redact(url),
                message: one_line(&e.to_string()),
            })?;
        // One plain connection first: the pool would report an unreachable
        // server only as a timeout, without the reason.
        let probe =
            sqlx::ConnectOptions::connect(&options)
                .await
                .map_err(|e| QueueError::Connect {
                    url: super::redact(url),
                    message: one_line(&e.to_string()),
                })?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = PgPoolOptions::new()
            .max_connections(connections.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|e| QueueError::Connect {
                url: super::redact(url),
                message: one_line(&e.to_string()),
            })?;
        let queue = PgQueue { pool };
        queue.create_schema().await?;
        Ok(queue)
    }

    async fn create_schema(&self) -> Result<(), QueueError> {
        let mut tx = self.pool.begin().await.map_err(pg("create tables"))?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SCHEMA_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(pg("create tables"))?;
        for statement in SCHEMA {
            sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .map_err(pg("create tables"))?;
        }
        tx.commit().await.map_err(pg("create tables"))
    }

    async fn lock_dependencies(
        tx: &mut Transaction<'_, Postgres>,
        op: &'static str,
    ) -> Result<(), QueueError> {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(DEPENDENCY_LOCK)
            .execute(&mut **tx)
            .await
            .map_err(pg(op))?;
        Ok(())
    }
}

#[async_trait]
impl TaskQueue for PgQueue {
    async fn enqueue(&self, plan: &JobPlan) -> Result<EnqueueReport, QueueError> {
        const OP: &str = "enqueue";
        let tasks = &plan.tasks;
        let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
        let kinds: Vec<String> = tasks.iter().map(|t| t.kind.as_str().to_owned()).collect();
        let priorities: Vec<i32> = tasks.iter().map(|t| t.kind.priority()).collect();
        let payloads: Vec<String> = tasks.iter().map(|t| t.payload.clone()).collect();
        let states: Vec<String> = tasks
            .iter()
            .map(|t| {
                if t.depends_on.is_empty() {
                    TaskState::Queued
                } else {
                    TaskState::Waiting
                }
                .as_str()
                .to_owned()
            })
            .collect();
        let max_attempts: Vec<i32> = tasks
            .iter()
            .map(|t| i32::try_from(t.max_attempts.max(1)).unwrap_or(i32::MAX))
            .collect();
        let (parents, children): (Vec<String>, Vec<String>) = tasks
            .iter()
            .flat_map(|t| t.depends_on.iter().map(|c| (t.id.clone(), c.clone())))
            .unzip();

        let mut tx = self.pool.begin().await.map_err(pg(OP))?;
        Self::lock_dependencies(&mut tx, OP).await?;
        // WITH ORDINALITY keeps the plan's order in `seq`.
        let added = sqlx::query(
            "INSERT INTO tingshu_tasks (id, kind, priority, payload, state, max_attempts)
             SELECT id, kind, priority, payload, state, max_attempts
             FROM UNNEST($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::int[])
                  WITH ORDINALITY AS t(id, kind, priority, payload, state, max_attempts, n)
             ORDER BY n
             ON CONFLICT (id) DO UPDATE
                SET state = 'queued', attempts = 0, due = now(), updated = now()
                WHERE tingshu_tasks.state = 'parked'",
        )
        .bind(&ids)
        .bind(&kinds)
        .bind(&priorities)
        .bind(&payloads)
        .bind(&states)
        .bind(&max_attempts)
        .execute(&mut *tx)
        .await
        .map_err(pg(OP))?
        .rows_affected();
        sqlx::query(
            "INSERT INTO tingshu_deps (parent, child)
             SELECT * FROM UNNEST($1::text[], $2::text[]) ON CONFLICT DO NOTHING",
        )
        .bind(&parents)
        .bind(&children)
        .execute(&mut *tx)
        .await
        .map_err(pg(OP))?;
        sqlx::query(
            "INSERT INTO tingshu_job_tasks (job, task)
             SELECT $1, id FROM UNNEST($2::text[]) AS t(id) ON CONFLICT DO NOTHING",
        )
        .bind(&plan.job)
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .map_err(pg(OP))?;
        // Tasks whose dependencies were all done by earlier work.
        sqlx::query(PROMOTE)
            .bind(&ids)
            .execute(&mut *tx)
            .await
            .map_err(pg(OP))?;
        tx.commit().await.map_err(pg(OP))?;
        Ok(EnqueueReport {
            planned: tasks.len(),
            added: added as usize,
        })
    }

    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<Claimed>, QueueError> {
        const OP: &str = "claim";
        // A task whose workers kept dying is parked rather than retried forever.
        sqlx::query(
            "UPDATE tingshu_tasks SET state = 'parked', updated = now(),
                error = 'its worker stopped responding ' || attempts || ' times'
                        || coalesce(' (last error: ' || error || ')', '')
             WHERE state = 'running' AND due <= now() AND attempts >= max_attempts",
        )
        .execute(&self.pool)
        .await
        .map_err(pg(OP))?;
        let row = sqlx::query(
            "UPDATE tingshu_tasks t
             SET state = 'running', attempts = t.attempts + 1, worker = $1,
                 due = now() + make_interval(secs => $2), updated = now()
             FROM (SELECT id FROM tingshu_tasks
                   WHERE state IN ('queued', 'running') AND due <= now()
                   ORDER BY priority, seq
                   LIMIT 1
                   FOR UPDATE SKIP LOCKED) next
             WHERE t.id = next.id
             RETURNING t.id, t.kind, t.payload, t.attempts",
        )
        .bind(worker)
        .bind(secs(lease))
        .fetch_optional(&self.pool)
        .await
        .map_err(pg(OP))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let id: String = row.try_get("id").map_err(pg(OP))?;
        let kind: String = row.try_get("kind").map_err(pg(OP))?;
        let kind = TaskKind::parse(&kind).ok_or_else(|| QueueError::Corrupt {
            id: id.clone(),
            message: format!("unknown kind '{kind}'"),
        })?;
        let attempts: i32 = row.try_get("attempts").map_err(pg(OP))?;
        Ok(Some(Claimed {
            payload: row.try_get("payload").map_err(pg(OP))?,
            id,
            kind,
            attempt: u32::try_from(attempts).unwrap_or(0),
        }))
    }

    async fn heartbeat(&self, id: &str, worker: &str, lease: Duration) -> Result<bool, QueueError> {
        let done = sqlx::query(
            "UPDATE tingshu_tasks SET due = now() + make_interval(secs => $3), updated = now()
             WHERE id = $1 AND worker = $2 AND state = 'running'",
        )
        .bind(id)
        .bind(worker)
        .bind(secs(lease))
        .execute(&self.pool)
        .await
        .map_err(pg("heartbeat"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn complete(&self, id: &str, result: Option<&str>) -> Result<(), QueueError> {
        const OP: &str = "complete";
        let mut tx = self.pool.begin().await.map_err(pg(OP))?;
        Self::lock_dependencies(&mut tx, OP).await?;
        let changed = sqlx::query(
            "UPDATE tingshu_tasks SET state = 'done', result = $2, error = NULL,
                 due = now(), updated = now()
             WHERE id = $1 AND state <> 'done'",
        )
        .bind(id)
        .bind(result)
        .execute(&mut *tx)
        .await
        .map_err(pg(OP))?
        .rows_affected();
        if changed > 0 {
            let parents: Vec<String> =
                sqlx::query_scalar("SELECT parent FROM tingshu_deps WHERE child = $1")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(pg(OP))?;
            if !parents.is_empty() {
                sqlx::query(PROMOTE)
                    .bind(&parents)
                    .execute(&mut *tx)
                    .await
                    .map_err(pg(OP))?;
            }
        }
        tx.commit().await.map_err(pg(OP))
    }

    async fn fail(
        &self,
        id: &str,
        worker: &str,
        error: &str,
        retry: bool,
        backoff: Duration,
    ) -> Result<TaskState, QueueError> {
        const OP: &str = "record failure";
        let state: Option<String> = sqlx::query_scalar(
            "UPDATE tingshu_tasks
             SET state = CASE WHEN $3 AND attempts < max_attempts THEN 'queued' ELSE 'parked' END,
                 error = $4, worker = NULL,
                 due = now() + make_interval(secs => $5), updated = now()
             WHERE id = $1 AND worker = $2 AND state = 'running'
             RETURNING state",
        )
        .bind(id)
        .bind(worker)
        .bind(retry)
        .bind(error)
        .bind(secs(backoff))
        .fetch_optional(&self.pool)
        .await
        .map_err(pg(OP))?;
        // None: another worker took the task over meanwhile; it decides.
        Ok(state
            .as_deref()
            .and_then(TaskState::parse)
            .unwrap_or(TaskState::Running))
    }

    async fn dependency_results(&self, id: &str) -> Result<Vec<String>, QueueError> {
        sqlx::query_scalar(
            "SELECT c.result FROM tingshu_deps d JOIN tingshu_tasks c ON c.id = d.child
             WHERE d.parent = $1 AND c.state = 'done' AND c.result IS NOT NULL
             ORDER BY c.seq",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(pg("read results"))
    }

    async fn status(&self) -> Result<Vec<JobStatus>, QueueError> {
        const OP: &str = "status";
        let rows = sqlx::query(
            "SELECT j.job, t.kind, t.state, count(*) AS n
             FROM tingshu_job_tasks j JOIN tingshu_tasks t ON t.id = j.task
             GROUP BY j.job, t.kind, t.state
             ORDER BY j.job, t.kind, t.state",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(pg(OP))?;
        let mut jobs: Vec<JobStatus> = Vec::new();
        for row in rows {
            let job: String = row.try_get("job").map_err(pg(OP))?;
            let kind: String = row.try_get("kind").map_err(pg(OP))?;
            let state: String = row.try_get("state").map_err(pg(OP))?;
            let n: i64 = row.try_get("n").map_err(pg(OP))?;
            let (Some(kind), Some(state)) = (TaskKind::parse(&kind), TaskState::parse(&state))
            else {
                continue;
            };
            if jobs.last().is_none_or(|j| j.job != job) {
                jobs.push(JobStatus {
                    job: job.clone(),
                    ..JobStatus::default()
                });
            }
            if let Some(last) = jobs.last_mut() {
                last.counts.push((kind, state, n.max(0) as u64));
            }
        }
        let parked = sqlx::query(
            "SELECT j.job, t.id, coalesce(t.error, '') AS error
             FROM tingshu_job_tasks j JOIN tingshu_tasks t ON t.id = j.task
             WHERE t.state = 'parked'
             ORDER BY j.job, t.seq",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(pg(OP))?;
        for row in parked {
            let job: String = row.try_get("job").map_err(pg(OP))?;
            if let Some(status) = jobs.iter_mut().find(|j| j.job == job)
                && status.parked.len() < 5
            {
                status.parked.push((
                    row.try_get("id").map_err(pg(OP))?,
                    row.try_get("error").map_err(pg(OP))?,
                ));
            }
        }
        Ok(jobs)
    }

    async fn totals(&self) -> Result<QueueTotals, QueueError> {
        let row = sqlx::query(
            "SELECT (SELECT count(*) FROM tingshu_tasks
                     WHERE state IN ('queued', 'running')) AS active,
                    (SELECT count(*) FROM tingshu_tasks WHERE state = 'waiting') AS waiting,
                    (SELECT count(*) FROM tingshu_tasks WHERE state = 'parked') AS parked",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(pg("totals"))?;
        let get = |name: &str| -> Result<u64, QueueError> {
            let n: i64 = row.try_get(name).map_err(pg("totals"))?;
            Ok(n.max(0) as u64)
        };
        Ok(QueueTotals {
            active: get("active")?,
            waiting: get("waiting")?,
            parked: get("parked")?,
        })
    }
}
