//! The one entry point: `systems::simulate` runs every system by name, finds the system from a
//! built-in preset's name, returns the same statistics as the system's own call inside the one
//! report envelope, and refuses a wrong system, workload or parameter by name.
use movelab_platform::systems::udp_pair::{self, Direction, RunSpec};
use movelab_platform::systems::{simulate, system_of_preset, Params, SYSTEMS};
use movelab_platform::{PlatformConfig, Workload};
use std::collections::BTreeMap;

fn params(kv: &[(&str, toml::Value)]) -> Params {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn none() -> toml::Value {
    toml::Value::Table(Default::default())
}

#[test]
fn every_system_runs_through_the_registry_with_its_own_results() {
    let p = params(&[("pages", 8.into())]);
    let r = simulate(None, "rowclone-system", &none(), "bulk-zero", &p).unwrap();
    let cfg = PlatformConfig::load("rowclone-system").unwrap();
    let w = Workload::load("bulk-zero", &BTreeMap::from([("pages".into(), 8)])).unwrap();
    let s = movelab_platform::run(&cfg, &w).unwrap();
    assert_eq!(r.system, "platform");
    assert_eq!(r.stats, serde_json::to_value(&s).unwrap());
    assert_eq!(r.time_ns, s.time_ns);

    let over: toml::Value = toml::from_str("wire = { duration_us = 300.0 }").unwrap();
    let p = params(&[("config", "softnic".into()), ("payload", 256.into())]);
    let r = simulate(Some("network-io"), "ixp2350", &over, "udp-rx", &p).unwrap();
    let cfg = udp_pair::load("ixp2350", &over).unwrap();
    let spec = RunSpec {
        config: "softnic".into(),
        direction: Direction::Rx,
        payload: 256,
        with_app: true,
    };
    // The network platform's workloads run on the one platform: the report holds the run's
    // figures and both ixp-host platforms' own statistics.
    let s = udp_pair::run(&cfg, &spec).unwrap();
    assert_eq!(r.system, "network-io");
    assert!(s.stats.throughput_mbps > 0.0);
    assert_eq!(r.stats, serde_json::to_value(&s).unwrap());
    assert_eq!(r.stats["hosts"][0]["platform"], "ixp-host");
    assert_eq!(r.stats["hosts"].as_array().map(Vec::len), Some(2));
}

#[test]
fn the_cluster_system_runs_two_platforms_on_one_wire() {
    let p = params(&[("messages", 3.into()), ("meters", 10.5.into())]);
    let r = simulate(Some("cluster"), "larsen-io", &none(), "pair", &p).unwrap();
    assert_eq!(r.system, "cluster");
    assert_eq!(r.stats["links"][0]["a_to_b"]["frames"], 3);
    assert_eq!(r.stats["links"][0]["propagation_ns"], 52.5);
    assert_eq!(
        r.stats["hosts"][1]["devices"][0]["rx_bytes_checked"],
        3 * 64
    );
    assert_eq!(r.stats["hosts"][1]["devices"][0]["rx_bytes_wrong"], 0);
    let e = simulate(
        Some("cluster"),
        "larsen-io",
        &none(),
        "ping",
        &Params::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pair"), "{e}");
    let p = params(&[("meters", "far".into())]);
    let e = simulate(Some("cluster"), "larsen-io", &none(), "pair", &p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("params.meters"), "{e}");
}

/// Every frame that reaches the receiving NIC is received, dropped or still held in its receive
/// FIFO at the end: with no receive buffers posted, the frames wait there and are counted (they
/// were in none of the NIC's counters).
#[test]
fn every_frame_the_receiver_takes_in_is_accounted_for() {
    for buffers in [0i64, 2, 64] {
        let p = params(&[("messages", 4.into()), ("buffers", buffers.into())]);
        let r = simulate(Some("cluster"), "larsen-io", &none(), "pair", &p).unwrap();
        let d = &r.stats["hosts"][1]["devices"][0];
        let n = |k: &str| d["nic"][k].as_u64().unwrap_or(0);
        let arrived = d["rx_frames_in"].as_u64().unwrap();
        assert_eq!(arrived, 4, "buffers {buffers}: {d}");
        assert_eq!(
            n("rx_frames") + n("rx_drops") + n("rx_fifo_held"),
            arrived,
            "buffers {buffers}: {d}"
        );
        if buffers == 0 {
            assert_eq!(n("rx_frames"), 0, "{d}");
        }
    }
}

#[test]
fn presets_name_their_system_and_bad_requests_are_refused_by_name() {
    for s in SYSTEMS {
        for p in (s.presets)() {
            assert_eq!(system_of_preset(p).map(|x| x.name), Some(s.name), "{p}");
        }
        assert!(!(s.workloads)().is_empty());
    }
    let err = |sys: Option<&str>, cfg: &str, w: &str, p: Params| {
        simulate(sys, cfg, &none(), w, &p).unwrap_err().to_string()
    };
    assert!(err(Some("nope"), "ixp2350", "udp-rx", Params::new()).contains("nope"));
    let e = err(None, "/no/such.toml", "udp-rx", Params::new());
    assert!(
        e.contains("/no/such.toml") && e.contains("network-io"),
        "{e}"
    );
    let e = err(None, "ixp2350", "udp-rxx", Params::new());
    assert!(e.contains("udp-rxx") && e.contains("udp-rx"), "{e}");
    let e = err(
        Some("cluster"),
        "larsen-io",
        "pair",
        params(&[("cnt", 1.into())]),
    );
    assert!(e.contains("params.cnt") && e.contains("messages"), "{e}");
    let e = err(
        None,
        "rowclone-system",
        "bulk-zero",
        params(&[("pages", (-1).into())]),
    );
    assert!(e.contains("params.pages"), "{e}");
    let e = err(None, "ixp2350", "udp-tx", params(&[("config", 3.into())]));
    assert!(e.contains("params.config"), "{e}");
    // A file given without its system that is not TOML, or not a file, says so first.
    let dir = std::env::temp_dir().join(format!("movelab-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[core\nkind = 1\n").unwrap();
    let e = err(None, bad.to_str().unwrap(), "tcp-rx", Params::new());
    assert!(
        e.contains("bad.toml") && !e.contains("name the system"),
        "{e}"
    );
    let e = err(None, dir.to_str().unwrap(), "tcp-rx", Params::new());
    assert!(e.contains("a directory"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    // Another system's workload on a preset found by name: which system to name.
    let e = err(None, "larsen-io", "pair", Params::new());
    assert!(
        e.contains("'pair' is a workload of the cluster system")
            && e.contains("larsen-io is a platform preset")
            && e.contains("--system cluster"),
        "{e}"
    );
}
