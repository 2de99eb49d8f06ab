//! Timing kernels of the IPC benchmark (section 4.5 of the paper): latency (half the round trip
//! of a ping-pong) and bandwidth (a window of outstanding one-way writes) vs message size, on a
//! connection whose preferred path selects single copy, two-copy shared memory or the plain
//! socket. One process runs [`drive`], its peer runs [`serve`] with the same sizes and `quick`
//! flag; both derive the same iteration counts from them. Every round trip is checked byte for byte
//! at the end of each size.
use super::conn::{Connection, Transfer, TransferPath};
use super::error::{IpcError, IpcResult};
use crate::cancel::Cancel;
use std::time::{Duration, Instant};

/// One measured size.
#[derive(Debug, Clone, PartialEq)]
pub struct IpcBenchRow {
    pub size_bytes: usize,
    /// The path the transfers actually took (after any fallback).
    pub path: TransferPath,
    /// One-way latency: half the median-free mean round trip of a ping-pong, in nanoseconds.
    pub latency_ns: f64,
    /// Bytes per second of a stream of writes with `window` in flight, in MB/s (10^6 bytes).
    pub bandwidth_mb_s: f64,
    pub latency_iters: usize,
    pub bandwidth_iters: usize,
    pub window: usize,
    /// Why single copy was not used, if it was wanted but refused.
    pub note: Option<String>,
}

const T: Option<Duration> = Some(Duration::from_secs(120));

fn write(conn: &Connection, buf: &[u8], cancel: &dyn Cancel) -> IpcResult<Transfer> {
    conn.iwrite(buf)?.wait_with(T, cancel)
}

fn read(conn: &Connection, buf: &mut [u8], cancel: &dyn Cancel) -> IpcResult<Transfer> {
    conn.iread(buf)?.wait_with(T, cancel)
}

/// (ping-pong iterations, bandwidth transfers, window) for a size; both sides compute the same.
pub fn schedule(size: usize, quick: bool) -> (usize, usize, usize) {
    let s = size.max(64);
    let (lat_budget, bw_budget, lat_max, bw_max) = if quick {
        (8usize << 20, 64usize << 20, 200usize, 400usize)
    } else {
        (128 << 20, 1 << 30, 2000, 5000)
    };
    let lat = (lat_budget / s).clamp(3, lat_max);
    let bw = (bw_budget / s).clamp(8, bw_max);
    let window = ((64usize << 20) / s).clamp(1, 8);
    (lat, bw, window)
}

fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(131) ^ seed) as u8).collect()
}

/// The measuring side: for each size, a ping-pong then a windowed stream of writes.
pub fn drive(
    conn: &Connection,
    sizes: &[usize],
    quick: bool,
    cancel: &dyn Cancel,
) -> IpcResult<Vec<IpcBenchRow>> {
    let mut rows = Vec::with_capacity(sizes.len());
    for (idx, &size) in sizes.iter().enumerate() {
        let (lat_iters, bw_iters, window) = schedule(size, quick);
        let src = pattern(size, idx);
        let mut back = vec![0u8; size];
        // Warm-up round trips (page faults, first-touch of the rings).
        for _ in 0..2 {
            write(conn, &src, cancel)?;
            read(conn, &mut back, cancel)?;
        }
        back.fill(0);
        let t0 = Instant::now();
        let mut last = None;
        for _ in 0..lat_iters {
            last = Some(write(conn, &src, cancel)?);
            read(conn, &mut back, cancel)?;
        }
        let rtt = t0.elapsed();
        if back != src {
            return Err(IpcError::Protocol(format!(
                "benchmark: the echoed {size}-byte message differs"
            )));
        }
        let lat = last.ok_or_else(|| IpcError::Protocol("no latency iteration ran".into()))?;

        let t0 = Instant::now();
        let guard = CloseOnError(conn);
        let mut inflight = std::collections::VecDeque::with_capacity(window);
        for _ in 0..bw_iters {
            if inflight.len() == window {
                if let Some(c) = inflight.pop_front() {
                    conn.wait_with(c, T, cancel)?;
                }
            }
            // SAFETY: src outlives every write: all of them are waited for before src drops, and
            // no one writes to src meanwhile.
            inflight.push_back(unsafe { conn.iwrite_raw(src.as_ptr(), src.len())? });
        }
        for c in inflight {
            conn.wait_with(c, T, cancel)?;
        }
        std::mem::forget(guard);
        let mut ack = [0u8; 1];
        read(conn, &mut ack, cancel)?;
        let bw_time = t0.elapsed();
        rows.push(IpcBenchRow {
            size_bytes: size,
            path: lat.path,
            latency_ns: rtt.as_nanos() as f64 / (2.0 * lat_iters as f64),
            bandwidth_mb_s: (size as f64 * bw_iters as f64) / bw_time.as_secs_f64() / 1e6,
            latency_iters: lat_iters,
            bandwidth_iters: bw_iters,
            window,
            note: lat.note,
        });
    }
    Ok(rows)
}

/// The echoing side: mirrors [`drive`] for the same sizes and `quick` flag.
pub fn serve(
    conn: &Connection,
    sizes: &[usize],
    quick: bool,
    cancel: &dyn Cancel,
) -> IpcResult<()> {
    for &size in sizes {
        let (lat_iters, bw_iters, window) = schedule(size, quick);
        let mut buf = vec![0u8; size];
        for _ in 0..lat_iters + 2 {
            read(conn, &mut buf, cancel)?;
            write(conn, &buf, cancel)?;
        }
        let mut bufs: Vec<Vec<u8>> = (0..window).map(|_| vec![0u8; size]).collect();
        let guard = CloseOnError(conn);
        let mut inflight = std::collections::VecDeque::with_capacity(window);
        for i in 0..bw_iters {
            if inflight.len() == window {
                if let Some(c) = inflight.pop_front() {
                    conn.wait_with(c, T, cancel)?;
                }
            }
            let b = &mut bufs[i % window];
            // SAFETY: buffer i % window is reused only after the read posted into it `window`
            // posts ago has been waited for (FIFO), and all reads are waited for before bufs drops.
            inflight.push_back(unsafe { conn.iread_raw(b.as_mut_ptr(), b.len())? });
        }
        for c in inflight {
            conn.wait_with(c, T, cancel)?;
        }
        write(conn, &[1u8], cancel)?;
        std::mem::forget(guard);
    }
    Ok(())
}

/// Closes the connection when a windowed loop leaves early (an error or Ctrl-C) with raw posts
/// still in flight: closing fails them and stops the peer from touching the buffers, which are
/// dropped right after. Declared after the buffers, so it runs before they are freed.
struct CloseOnError<'a>(&'a Connection);

impl Drop for CloseOnError<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}
