//! When a bulk operation's channel part is done (`controller.bulk_write_done`): "written" (the
//! default) waits for its last write to be performed in the DRAM, "accepted" only for its last
//! read to return and its last write to enter the write queue. The option changes when an
//! operation is reported done, never which commands issue or when.
use movelab_dram::command::CommandRecord;
use movelab_dram::config::Config;
use movelab_dram::request::{BulkKind, BulkOp, TraceItem};
use movelab_dram::stats::Stats;
use movelab_dram::system::{simulate, RunOptions};

fn config(done: &str, write_queue: usize) -> Config {
    let mut c = Config::preset("rowclone-ddr3-1066").unwrap();
    c.controller.bulk = "baseline".into();
    c.controller.refresh = "none".into();
    c.controller.write_queue = write_queue;
    c.controller.bulk_write_done = done.into();
    c
}

/// A burst's data-bus clocks on the config (nBL).
fn burst(c: &Config) -> u64 {
    c.resolve("t").unwrap().t("nBL")
}

fn run(c: &Config, ops: &[BulkOp]) -> (Stats, Vec<CommandRecord>) {
    let mut log: Vec<CommandRecord> = Vec::new();
    let s = simulate(
        c,
        ops.iter().map(|o| Ok(TraceItem::Bulk(*o))),
        RunOptions {
            command_log: Some(&mut log),
            ..Default::default()
        },
    )
    .unwrap();
    (s, log)
}

fn copy(src: u64, dst: u64) -> BulkOp {
    BulkOp {
        kind: BulkKind::Copy { src },
        dst,
        bytes: 4096,
        arrival: Some(0),
    }
}

fn zero(dst: u64) -> BulkOp {
    BulkOp {
        kind: BulkKind::Init { value: 0 },
        dst,
        bytes: 4096,
        arrival: Some(0),
    }
}

#[test]
fn accepted_reports_a_copy_done_before_its_writes_are_performed() {
    let ops = [copy(0, 1 << 20)];
    let (w, wlog) = run(&config("written", 64), &ops);
    let (a, alog) = run(&config("accepted", 64), &ops);
    assert_eq!(
        wlog, alog,
        "the commands do not depend on when the operation is reported"
    );
    assert_eq!((w.bulk.ops, a.bulk.ops), (1, 1));
    // The 64 writes take at least 64 bursts after the last read: written waits for them.
    let burst = burst(&config("written", 64));
    assert!(
        a.bulk.latency.max_cycles + 64 * burst <= w.bulk.latency.max_cycles,
        "accepted {} written {}",
        a.bulk.latency.max_cycles,
        w.bulk.latency.max_cycles
    );
    // Still after the 64 reads: at least 64 bursts.
    assert!(a.bulk.latency.max_cycles >= 64 * burst);
}

#[test]
fn a_zeroing_the_write_queue_holds_is_done_when_handed_over() {
    let (a, _) = run(&config("accepted", 64), &[zero(0)]);
    assert_eq!(a.bulk.latency.max_cycles, 0);
    // A write queue of 16 takes the page in steps: done when the last 16 are queued, which is
    // after 48 writes were performed and before the last 16 are.
    let (a16, alog) = run(&config("accepted", 16), &[zero(0)]);
    let (w16, wlog) = run(&config("written", 16), &[zero(0)]);
    assert_eq!(alog, wlog);
    let (lat, full) = (a16.bulk.latency.max_cycles, w16.bulk.latency.max_cycles);
    let burst = burst(&config("written", 16));
    assert!(
        lat >= 48 * burst && lat + 16 * burst <= full,
        "accepted {lat} written {full}"
    );
}

#[test]
fn operations_after_an_accepted_one_complete_as_usual() {
    let ops = [copy(0, 1 << 20), zero(2 << 20), copy(3 << 20, 4 << 20)];
    let (w, wlog) = run(&config("written", 64), &ops);
    let (a, alog) = run(&config("accepted", 64), &ops);
    assert_eq!(wlog, alog);
    assert_eq!((a.bulk.ops, a.bulk.latency.count), (3, 3));
    assert!(a.bulk.latency.mean_cycles < w.bulk.latency.mean_cycles);
    // The run lasts until the last write is performed either way.
    assert_eq!(a.cycles, w.cycles);
}

#[test]
fn a_bad_value_names_the_key() {
    let e = config("queued", 64).resolve("t").unwrap_err().to_string();
    assert!(
        e.contains("controller.bulk_write_done") && e.contains("written, accepted"),
        "{e}"
    );
}
