//! Every attempt of a read as the driver made it: when it was sent, to which node, and how it
//! ended. The driver reports attempts to a statement's history listener, so this sees the
//! node each copy really went to whatever policy chose it (the driver's own included), retries
//! after a broken connection too. The failover figures (`crate::failover`) are built from it.

use scylla::errors::{DbError, RequestAttemptError, RequestError};
use scylla::observability::history::{AttemptId, HistoryListener, RequestId, SpeculativeId};
use scylla::policies::retry::RetryDecision;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptEnd {
    /// The node answered.
    Answered,
    /// The node answered that it timed out (a read timeout of the coordinator).
    TimedOut,
    /// The connection broke or the node refused it.
    Failed,
    /// No answer was heard: the request was given up (the bench's timeout) while it waited.
    Unheard,
}

/// One attempt of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// When the driver sent it.
    pub sent: Instant,
    /// The node it went to (its CQL address as the driver knows it).
    pub node: SocketAddr,
    /// How it ended.
    pub end: AttemptEnd,
}

/// The attempts of every request made with the statements it listens to.
#[derive(Debug, Default)]
pub struct AttemptLog {
    attempts: Mutex<Vec<Attempt>>,
    requests: AtomicUsize,
    fibers: AtomicUsize,
}

impl AttemptLog {
    /// An empty log.
    pub fn new() -> AttemptLog {
        AttemptLog::default()
    }

    /// Every attempt so far, in the order they were sent.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.attempts.lock().expect("attempt log").clone()
    }

    fn end(&self, id: AttemptId, end: AttemptEnd) {
        if let Some(a) = self.attempts.lock().expect("attempt log").get_mut(id.0) {
            a.end = end;
        }
    }
}

/// How an attempt that failed with `error` ended.
fn failed_end(error: &RequestAttemptError) -> AttemptEnd {
    match error {
        RequestAttemptError::DbError(DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. }, _) => {
            AttemptEnd::TimedOut
        }
        _ => AttemptEnd::Failed,
    }
}

impl HistoryListener for AttemptLog {
    fn log_request_start(&self) -> RequestId {
        RequestId(self.requests.fetch_add(1, Ordering::Relaxed))
    }

    fn log_request_success(&self, _request_id: RequestId) {}

    fn log_request_error(&self, _request_id: RequestId, _error: &RequestError) {}

    fn log_new_speculative_fiber(&self, _request_id: RequestId) -> SpeculativeId {
        SpeculativeId(self.fibers.fetch_add(1, Ordering::Relaxed))
    }

    fn log_attempt_start(&self, _request: RequestId, _fiber: Option<SpeculativeId>, node: SocketAddr) -> AttemptId {
        let mut attempts = self.attempts.lock().expect("attempt log");
        attempts.push(Attempt { sent: Instant::now(), node, end: AttemptEnd::Unheard });
        AttemptId(attempts.len() - 1)
    }

    fn log_attempt_success(&self, attempt_id: AttemptId) {
        self.end(attempt_id, AttemptEnd::Answered);
    }

    fn log_attempt_error(&self, attempt_id: AttemptId, error: &RequestAttemptError, _decision: &RetryDecision) {
        self.end(attempt_id, failed_end(error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_keep_their_node_and_end() {
        let log = AttemptLog::new();
        let a: SocketAddr = "127.0.0.1:9042".parse().unwrap();
        let b: SocketAddr = "127.0.0.2:9042".parse().unwrap();
        let r = log.log_request_start();
        let first = log.log_attempt_start(r, None, a);
        log.log_attempt_error(
            first,
            &RequestAttemptError::UnableToAllocStreamId,
            &RetryDecision::RetryNextTarget(None),
        );
        let second = log.log_attempt_start(r, None, b);
        log.log_attempt_success(second);
        let r2 = log.log_request_start();
        log.log_attempt_start(r2, None, a);
        let timeout = DbError::ReadTimeout {
            consistency: scylla::statement::Consistency::One,
            received: 0,
            required: 1,
            data_present: false,
        };
        let third = log.log_attempt_start(r2, None, b);
        log.log_attempt_error(third, &RequestAttemptError::DbError(timeout, "t".into()), &RetryDecision::DontRetry);
        let ends: Vec<(SocketAddr, AttemptEnd)> = log.attempts().iter().map(|x| (x.node, x.end)).collect();
        assert_eq!(
            ends,
            [(a, AttemptEnd::Failed), (b, AttemptEnd::Answered), (a, AttemptEnd::Unheard), (b, AttemptEnd::TimedOut)]
        );
        assert_ne!(r, r2);
    }
}
