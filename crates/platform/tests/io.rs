//! The I/O presets (`presets/io/`, `config/io.rs`) now that the platform is the one run loop: each
//! loads and validates, a bad key is refused by name, every preset runs on the cluster through
//! either device, the keys the platform reads move its results, and the retired two-host system
//! is refused with what replaces it.
use movelab_platform::config::io::{builtin_io_names, IoConfig, RootComplexConfig};
use movelab_platform::experiments::larsen_idma::{
    cluster_stream, haswell_warm_read_ns, FIG8_PLATFORM, FIG9_PLATFORM, HASWELL_IO,
};
use movelab_platform::experiments::pcie_model_check::{movelab_nic, pm_nic_bytes, pm_tlp_gbps};
use movelab_platform::systems::{simulate, system, Params};

fn none() -> toml::Value {
    toml::Value::Table(Default::default())
}

#[test]
fn bad_configs_name_the_key() {
    let base = IoConfig::preset("larsen-82598-gen1").unwrap();
    for (ov, key) in [
        ("link = { gen = 4 }", "link.gen"),
        ("link = { mps = 100 }", "link.mps"),
        ("nic = { rx_fetch = \"two\" }", "nic.rx_fetch"),
        ("nic = { tx_ring = 12 }", "nic.tx_ring"),
        ("nic = { tx_wthresh = 8, itr_us = 0.0 }", "nic.tx_wthresh"),
        (
            "root_complex = { warm_read_ns = -1.0 }",
            "root_complex.warm_read_ns",
        ),
        (
            "root_complex = { warm_read_ns = nan }",
            "root_complex.warm_read_ns",
        ),
        ("nic = { kind = \"smart\" }", "nic.kind"),
        ("nic = { bogus = 1 }", "nic"),
        ("root_complex = { warm_read = 546.0 }", "root_complex"),
        // Keys only the retired two-host model read: refused, named.
        ("root_complex = { read_ns = 1 }", "`read_ns`"),
        ("root_complex = { ddio_lines = 1 }", "ddio_lines"),
        ("root_complex = { llc_ns = 1 }", "llc_ns"),
        ("root_complex = { dram_ns = 1 }", "dram_ns"),
        ("root_complex = { irq_delivery_ns = 1 }", "irq_delivery_ns"),
        ("idma = { doorbell_ns = 1 }", "doorbell_ns"),
        ("idma = { mem_read_ns = 1 }", "mem_read_ns"),
        ("idma = { mem_line_ns = 1 }", "mem_line_ns"),
        ("idma = { mem_write_line_ns = 1 }", "mem_write_line_ns"),
        ("idma = { notify_ns = 1 }", "notify_ns"),
    ] {
        let v: toml::Value = toml::from_str(ov).unwrap();
        let e = base.with_overrides(v, "test").unwrap_err().to_string();
        assert!(e.contains(key), "{ov}: {e}");
    }
    assert!(IoConfig::load("no-such-io-platform").is_err());
}

/// pcie-bench's host-warm read is a key of the Haswell preset, beside its citation; it defaults
/// to none (0) on the presets that have no such measurement, and the Haswell rows refuse a
/// preset without it.
#[test]
fn the_warm_read_is_a_preset_key() {
    assert_eq!(RootComplexConfig::default().warm_read_ns, 0.0);
    let h = IoConfig::preset(HASWELL_IO).unwrap();
    assert_eq!(h.root_complex.warm_read_ns, 546.0);
    assert_eq!(haswell_warm_read_ns().unwrap(), 546.0);
    for name in ["larsen-82598-gen1", "larsen-82599-gen2"] {
        assert_eq!(
            IoConfig::preset(name).unwrap().root_complex.warm_read_ns,
            0.0
        );
    }
    let text = include_str!("../../../presets/io/haswell-gen3.toml");
    let at = text.find("warm_read_ns").expect("the key");
    assert!(
        text[..at].contains("pcie-bench"),
        "the citation sits next to the key"
    );
}

/// Every I/O preset runs on the cluster through the descriptor NIC and the iDMA: one frame, every
/// byte checked (`cluster_stream` checks the oracle).
#[test]
fn every_preset_runs_on_the_cluster() {
    for name in builtin_io_names() {
        let io = IoConfig::preset(name).unwrap();
        for p in [FIG8_PLATFORM, FIG9_PLATFORM] {
            let s = cluster_stream(
                p,
                p,
                &none(),
                name,
                io.nic.mac_gbps,
                &toml::Table::new(),
                &toml::Table::new(),
                2,
                200,
                0,
                false,
            )
            .unwrap_or_else(|e| panic!("{name} on {p}: {e}"));
            assert_eq!(s.hosts[0].devices[0].frames, 2, "{name} on {p}");
        }
    }
}

/// The preset's link is what the cluster's devices run on: a 64 B frame's bytes on the link are
/// the same at every generation, its time is not.
#[test]
fn the_presets_link_moves_the_cluster() {
    let run = |gen: i64| {
        let link = toml::Table::from_iter([("gen".to_string(), toml::Value::Integer(gen))]);
        cluster_stream(
            FIG8_PLATFORM,
            FIG8_PLATFORM,
            &none(),
            "larsen-82598-gen1",
            10.0,
            &link,
            &toml::Table::new(),
            4,
            64,
            0,
            false,
        )
        .unwrap()
    };
    let (g1, g3) = (run(1), run(3));
    let last = |s: &movelab_platform::systems::cluster::ClusterStats| {
        s.links[0].passages.iter().map(|p| p.2).fold(0.0, f64::max)
    };
    assert!(last(&g3) < last(&g1), "{} vs {}", last(&g3), last(&g1));
    let payload = |s: &movelab_platform::systems::cluster::ClusterStats| {
        s.hosts[0].devices[0]
            .bytes_down
            .iter()
            .find(|(k, _)| k == "payload")
            .map(|(_, v)| *v)
    };
    assert_eq!(payload(&g1), payload(&g3));
}

/// The two-host system is gone from the registry: naming it, or running an I/O preset without a
/// system, is refused with what replaces it.
#[test]
fn the_retired_two_host_system_names_its_replacement() {
    let e = system("io-pair").err().expect("retired").to_string();
    assert!(e.contains("cluster") && e.contains("larsen-io"), "{e}");
    let p = Params::new();
    for sys in [Some("io-pair"), None] {
        let e = simulate(sys, "larsen-82598-gen1", &none(), "stream", &p)
            .expect_err("retired")
            .to_string();
        assert!(e.contains("retired") && e.contains("cluster"), "{e}");
    }
}

/// The pcie-model check's NIC rows on the cluster: both models put small frames far below the
/// link and large frames close to it; the kernel NIC's batched RX write-backs and moderated
/// interrupts cost fewer bytes per small packet than the simple NIC's one of each per packet; a
/// frame outside what the stream sends is refused by name.
#[test]
fn pcie_model_nic_rows_agree_in_shape() {
    let (tx64, rx64) = movelab_nic(cluster_stream, true, 64).unwrap();
    let (tx1500, rx1500) = movelab_nic(cluster_stream, true, 1500).unwrap();
    assert!(tx64 < 0.6 * tx1500 && rx64 < 0.6 * rx1500);
    let ((h, d), _) = pm_nic_bytes(true, 1500, true);
    let ptx = pm_tlp_gbps(3) * 1500.0 / h.max(d);
    assert!((tx1500 / ptx - 1.0).abs() < 0.15, "{tx1500} vs {ptx}");
    let (_, srx64) = movelab_nic(cluster_stream, false, 64).unwrap();
    assert!(rx64 > 1.05 * srx64, "{rx64} vs {srx64}");
    for bad in [10, 9000] {
        let e = movelab_nic(cluster_stream, true, bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("frame"), "{e}");
    }
}

/// A Fig. 10 stream holds `MAX_STREAM_FRAMES` frames: the counts that fill it are the limits (250
/// small messages; 64 KB messages of 46 TSO segments fill it at 5, of 45 iDMA frames at 6), and
/// a count beyond them, which would run the same frames, is refused naming the option.
#[test]
fn larsen_stream_counts_are_bounded_by_what_a_stream_holds() {
    use movelab_platform::experiments::larsen_idma::{self, Options, MAX_STREAM_FRAMES};
    let o = Options::paper().unwrap();
    assert_eq!(
        larsen_idma::stream_limits(&o.bandwidth),
        (MAX_STREAM_FRAMES, 6)
    );
    assert_eq!((o.small_count, o.large_count), (250, 6));
    for (small, large, key) in [
        (251, 6, "small_count"),
        (250, 7, "large_count"),
        (0, 6, "small_count"),
    ] {
        let mut bad = o.clone();
        bad.parts = vec!["fig10".into()];
        bad.small_count = small;
        bad.large_count = large;
        let e = larsen_idma::run(&bad, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains("must be from 1 to"), "{e}");
    }
}
