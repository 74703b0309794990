//! The cross-rack delay (`emulation.cross_delay_us`, from a spec's `cluster.topology`): frames
//! to a peer in another rack leave `delay` after they were queued, in order. No thread waits:
//! one task stamps each frame as it is queued, another holds it until its time, so frames queued
//! while an earlier one waits are not delayed further (every frame takes the same delay).

use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The frames of `rx`, each `delay` after it was queued, in order.
pub fn delayed<T: Send + 'static>(mut rx: mpsc::Receiver<T>, delay: Duration) -> mpsc::Receiver<T> {
    let (stamped_tx, mut stamped) = mpsc::unbounded_channel::<(Instant, T)>();
    let (out_tx, out) = mpsc::channel(1024);
    tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if stamped_tx.send((Instant::now() + delay, frame)).is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        while let Some((due, frame)) = stamped.recv().await {
            tokio::time::sleep_until(due).await;
            if out_tx.send(frame).await.is_err() {
                return;
            }
        }
    });
    out
}
