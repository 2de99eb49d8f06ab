//! When a copy engine's destination write counts as done (`copy.write_done`): "accepted" (a
//! posted write, done once the memory controller holds it) or "written" (done when the DRAM
//! performs it: Zhao et al. section 5.4's one memory queue with no write buffer, which the
//! `zhao-uma-emc` preset uses). A copy done only when its lines are written cannot beat the
//! DRAM's bandwidth for its reads and writes, and it must slow when that bandwidth halves.
mod common;
use common::mean_engine_copy;
use movelab_platform::PlatformConfig;

/// Mean copy time (ns) of 8 separate 1 KB engine copies (SYNC_WLB) with `write_done` and
/// `channels` DDR2-400 channels of 3.2 GB/s.
fn mean_copy(write_done: &str, channels: u32) -> f64 {
    let over = format!(
        "copy = {{ mechanism = \"ce\", mode = \"SYNC_WLB\", write_done = \"{write_done}\" }}\n\
         memory = {{ dram = {{ channels = {channels} }} }}"
    );
    mean_engine_copy(&over, 8, 1024)
}

#[test]
fn a_copy_done_when_written_pays_the_dram_bandwidth_for_its_writes() {
    let written = mean_copy("written", 2);
    let accepted = mean_copy("accepted", 2);
    println!("1 KB copy: accepted {accepted:.0} ns, written {written:.0} ns");
    // 1 KB read and 1 KB written over two 3.2 GB/s channels: at least 320 ns of data transfer.
    assert!(
        written >= 2048.0 / 6.4,
        "a 1 KB copy done when written took {written:.0} ns, under the 320 ns the channels need"
    );
    // Its last write is performed after it is accepted: at least one 64-byte burst (20 ns at
    // 3.2 GB/s) later.
    assert!(
        written > accepted + 20.0,
        "written ({written:.0} ns) must wait for the last write the accepted copy \
         ({accepted:.0} ns) only queued"
    );
}

#[test]
fn a_copy_done_when_written_slows_with_the_write_bandwidth() {
    // One channel halves the bandwidth: a copy done when written pays the extra time of its reads
    // and of its writes; a posted copy only that of its reads.
    let w = mean_copy("written", 1) - mean_copy("written", 2);
    let a = mean_copy("accepted", 1) - mean_copy("accepted", 2);
    println!("one channel instead of two: written +{w:.0} ns, accepted +{a:.0} ns");
    assert!(w > a + 80.0, "written +{w:.0} ns, accepted +{a:.0} ns");
}

#[test]
fn an_unknown_write_done_is_refused_by_name() {
    let e = PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(
            toml::from_str("copy = { write_done = \"later\" }").unwrap(),
            "test",
        )
        .and_then(|c| c.validate("test").map(|_| c))
        .expect_err("an unknown write_done must be refused");
    let m = e.to_string();
    assert!(m.contains("copy.write_done") && m.contains("later"), "{m}");
}
