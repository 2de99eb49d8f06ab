//! Wun & Crowley's configurations on the one platform (`systems/udp_pair.rs`, two `ixp-host`s on
//! one wire): every configuration delivers byte-checked datagrams and accounts for every one it
//! loses; the microengines' count, contexts and clock move the throughput once they are the
//! bottleneck, and no setting in their documented ranges fails a run; an override the platform
//! does not read and a bad run are refused by name.
use movelab_platform::config::network::NetworkIoConfig;
use movelab_platform::systems::udp_pair::{
    load, refuse_unread_overrides, run, run_variant, unread_overrides, Direction, NetStats,
    RunSpec, Variant,
};

/// The preset with `over` (TOML) merged in.
fn cfg(over: &str) -> NetworkIoConfig {
    load("ixp2350", &toml::from_str(over).unwrap()).unwrap()
}

fn spec(config: &str, direction: Direction, payload: usize, with_app: bool) -> RunSpec {
    RunSpec {
        config: config.into(),
        direction,
        payload,
        with_app,
    }
}

fn go(c: &NetworkIoConfig, s: &RunSpec) -> NetStats {
    run(c, s).unwrap_or_else(|e| panic!("{s:?}: {e}")).stats
}

/// Every datagram sent was delivered or lost, every lost one dropped at a counted place.
fn conserved(s: &NetStats) {
    let drops = s.rbuf_drops + s.ring_drops + s.buffer_drops + s.socket_drops;
    assert!(
        s.sent == s.delivered + s.lost && s.lost == drops,
        "sent {} = delivered {} + lost {}; lost = drops {drops}: {s:?}",
        s.sent,
        s.delivered,
        s.lost
    );
}

#[test]
fn every_configuration_delivers_checked_datagrams_and_accounts_for_losses() {
    let c = cfg("wire = { duration_us = 200.0 }");
    for config in ["emu", "softnic", "onloader"] {
        for dir in [Direction::Rx, Direction::Tx] {
            let s = go(&c, &spec(config, dir, 1472, true));
            conserved(&s);
            assert!(s.delivered > 0, "{config} {dir:?}: {s:?}");
            assert!(
                s.throughput_mbps > 0.0 && s.throughput_mbps <= s.offered_mbps * 1.01,
                "{config} {dir:?}: {s:?}"
            );
            if dir == Direction::Rx {
                // The receiving microengines checked every delivered datagram's bytes.
                assert!(s.rx_bytes_checked >= s.delivered * 1472, "{config}: {s:?}");
            } else {
                assert_eq!(s.delivered, s.sent, "{config} tx: {s:?}");
            }
        }
    }
}

/// The onloader's receive blocks alone at 64 B (the most per-packet work per byte) with the
/// microengines `sc` (a TOML table's body).
fn blocks(sc: &str) -> NetStats {
    let c = cfg(&format!(
        "small_cores = {{ {sc} }}\nwire = {{ duration_us = 600.0 }}"
    ));
    let s = go(&c, &spec("onloader", Direction::Rx, 64, false));
    conserved(&s);
    s
}

#[test]
fn microengine_count_threads_and_clock_move_throughput_once_they_bind() {
    let base = blocks("clock_mhz = 50.0, rx_cores = 1, threads = 8");
    // The slow microengine is the bottleneck: busy all the time, frames dropped at the RBUF.
    assert!(base.rx_cores_busy > 0.9 && base.rbuf_drops > 0, "{base:?}");
    let two = blocks("clock_mhz = 50.0, rx_cores = 2, threads = 8");
    let fast = blocks("clock_mhz = 100.0, rx_cores = 1, threads = 8");
    let one_ctx = blocks("clock_mhz = 100.0, rx_cores = 1, threads = 1");
    for (what, s) in [("twice the engines", &two), ("twice the clock", &fast)] {
        assert!(
            s.throughput_mbps > 1.5 * base.throughput_mbps,
            "{what}: {} against {}",
            s.throughput_mbps,
            base.throughput_mbps
        );
    }
    // One context cannot hide its memory commands' latency as eight do.
    assert!(
        one_ctx.throughput_mbps < 0.95 * fast.throughput_mbps,
        "one context {} against eight {}",
        one_ctx.throughput_mbps,
        fast.throughput_mbps
    );
}

#[test]
fn no_microengine_setting_in_the_documented_ranges_fails_a_run() {
    // The corners of small_cores' ranges (config/network.rs: clock 1..=10000 MHz, cores and
    // contexts 1..=64).
    for clock in [1.0, 10_000.0] {
        for n in [1, 64] {
            for threads in [1, 64] {
                let s = blocks(&format!(
                    "clock_mhz = {clock:.1}, rx_cores = {n}, threads = {threads}"
                ));
                assert!(s.delivered > 0, "{clock} MHz {n} x {threads}: {s:?}");
            }
        }
    }
}

#[test]
fn unread_overrides_and_bad_runs_are_refused_by_name() {
    let e = load(
        "ixp2350",
        &toml::from_str("queues = { socket = 3 }").unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("queues.socket") && e.contains("small_cores.rx_cores"),
        "{e}"
    );
    let e = load("ixp2350", &toml::from_str("host = { cpi = -1.0 }").unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("host.cpi"), "{e}");
    let c = cfg("wire = { duration_us = 200.0 }");
    let err = |s: RunSpec| run(&c, &s).unwrap_err().to_string();
    let e = err(spec("nic", Direction::Rx, 512, true));
    assert!(e.contains("nic") && e.contains("softnic"), "{e}");
    let e = err(spec("emu", Direction::Rx, 9000, true));
    assert!(e.contains("payload_bytes"), "{e}");
    let e = err(spec("softnic", Direction::Rx, 512, false));
    assert!(e.contains("with_app"), "{e}");
    let e = err(spec("onloader", Direction::Tx, 512, false));
    assert!(e.contains("with_app"), "{e}");
    // A peer sending longer than the run allows is refused where the key is read, with the run's
    // own bound (the config once allowed 100 times more, which the run then refused).
    let e = load(
        "ixp2350",
        &toml::from_str("wire = { duration_us = 1000000.0 }").unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("wire.duration_us") && e.contains("1..=100000"),
        "{e}"
    );
    assert!(run(
        &cfg("wire = { duration_us = 100000.0 }"),
        &spec("emu", Direction::Rx, 512, true)
    )
    .is_ok());
}

/// Every override a run would not read is named (one per run kind below), and each one named
/// leaves the run exactly as it was: the refusal never turns away a setting that mattered.
#[test]
fn overrides_a_run_does_not_read_are_refused_and_change_nothing() {
    let base = "wire = { duration_us = 200.0 }";
    // (run, the keys it does not read, keys it does read)
    let cases: &[(RunSpec, &[&str], &[&str])] = &[
        (
            spec("emu", Direction::Rx, 512, true),
            &[
                "host.l2_push",
                "host.mapping_cache",
                "host.onload_send",
                "small_cores.tx_cores",
            ],
            &[
                "host.cpi",
                "host.app_per_datagram",
                "small_cores.rx_cores",
                "wire.duration_us",
            ],
        ),
        (
            spec("softnic", Direction::Rx, 512, true),
            &["host.mapping_cache", "host.onload_send"],
            &["host.l2_push", "host.cpi"],
        ),
        (
            spec("onloader", Direction::Rx, 512, true),
            &["host.onload_send", "small_cores.tx_cores"],
            &[
                "host.l2_push",
                "host.mapping_cache",
                "host.app_per_datagram",
            ],
        ),
        (
            spec("onloader", Direction::Rx, 512, false),
            &["host.cpi", "host.app_per_datagram", "host.mapping_cache"],
            // The host's clock still counts its cycles (`host_cycles`), idle as they are.
            &["host.l2_push", "small_cores.clock_mhz", "host.clock_mhz"],
        ),
        (
            spec("emu", Direction::Tx, 512, true),
            &[
                "host.l2_push",
                "host.mapping_cache",
                "host.onload_send",
                "wire.duration_us",
                "small_cores.rx_cores",
            ],
            &["host.app_per_datagram", "small_cores.tx_cores"],
        ),
        (
            spec("onloader", Direction::Tx, 512, true),
            &["host.l2_push", "host.mapping_cache", "wire.duration_us"],
            &["host.onload_send", "host.cpi"],
        ),
    ];
    // A value unlike the preset's for each key.
    let value = |key: &str| match key {
        "host.l2_push" | "host.mapping_cache" => "false",
        "host.clock_mhz" => "300.0",
        "host.cpi" => "20.0",
        "host.app_per_datagram" | "host.onload_send" => "4000",
        "small_cores.tx_cores" | "small_cores.rx_cores" => "1",
        "small_cores.clock_mhz" => "300.0",
        "wire.duration_us" => "150.0",
        k => panic!("no value for {k}"),
    };
    // `key` set, and a receive run's sending time kept short (a transmit run does not read it).
    let over = |key: &str, s: &RunSpec| -> toml::Value {
        let (section, k) = key.split_once('.').unwrap();
        let mut text = format!("[{section}]\n{k} = {}\n", value(key));
        if section != "wire" && s.direction == Direction::Rx {
            text.push_str("[wire]\nduration_us = 200.0\n");
        }
        toml::from_str(&text).unwrap()
    };
    let c = cfg(base);
    for (s, unread, read) in cases {
        let plain = go(&c, s);
        let mut all = toml::Table::new();
        for key in unread.iter() {
            let ov = over(key, s);
            let named: Vec<String> = unread_overrides(&ov, s)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            assert_eq!(named, vec![key.to_string()], "{s:?} with {key}");
            let e = refuse_unread_overrides(&ov, s).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("not read by this run"), "{e}");
            let with = go(&load("ixp2350", &ov).unwrap(), s);
            assert_eq!(
                format!("{with:?}"),
                format!("{plain:?}"),
                "{s:?}: {key} was refused as unread, but it changed the run"
            );
            let (section, k) = key.split_once('.').unwrap();
            all.entry(section)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .unwrap()
                .insert(k.into(), ov[section][k].clone());
        }
        assert_eq!(
            unread_overrides(&toml::Value::Table(all), s).unwrap().len(),
            unread.len()
        );
        for key in read.iter() {
            assert!(
                unread_overrides(&over(key, s), s).unwrap().is_empty(),
                "{s:?}: {key} is read"
            );
        }
    }
}

/// The receive rate with the application is what the host consumed: every delivered datagram is
/// consumed once the host drains its buffers, each byte-checked again when it is, and a
/// configuration that posts buffers ahead (the softnic's ring) does not read its ring's
/// fill at the wire's rate as its rate on a short run.
#[test]
fn the_receive_rate_is_what_the_host_consumed() {
    for config in ["emu", "softnic", "onloader"] {
        let short = go(
            &cfg("wire = { duration_us = 400.0 }"),
            &spec(config, Direction::Rx, 1472, true),
        );
        let long = go(
            &cfg("wire = { duration_us = 3000.0 }"),
            &spec(config, Direction::Rx, 1472, true),
        );
        for s in [&short, &long] {
            conserved(s);
            assert_eq!(s.consumed, s.delivered, "{config}: {s:?}");
        }
        // The host binds (it drops at the RBUF) and its rate does not depend on the run's length.
        assert!(long.rbuf_drops > 0, "{config}: {long:?}");
        let r = short.throughput_mbps / long.throughput_mbps;
        assert!(
            (0.95..1.05).contains(&r),
            "{config}: {} Mb/s over 400 us against {} over 3 ms",
            short.throughput_mbps,
            long.throughput_mbps
        );
    }
}

/// A receive run of `config` at 1472 B over 400 us with `ahead` buffers posted ahead: its stats
/// and the rate its microengines' deliveries would read (delivered payload over the time to the
/// last delivery).
fn ahead_run(config: &str, ahead: u64) -> (NetStats, f64) {
    let v = Variant {
        rx_buffers: Some(ahead),
        ..Variant::default()
    };
    let c = cfg("wire = { duration_us = 400.0 }");
    let r = run_variant(&c, &spec(config, Direction::Rx, 1472, true), &v)
        .unwrap_or_else(|e| panic!("{config} {ahead} ahead: {e}"));
    conserved(&r.stats);
    let last = r.hosts[0]
        .agents
        .iter()
        .find(|a| a.kind == "microengines")
        .map(|a| a.last_done_ns)
        .unwrap();
    let deliveries = (r.stats.delivered * 1472) as f64 * 8.0 * 1000.0 / last;
    (r.stats, deliveries)
}

/// Posting more buffers ahead lets the microengines fill them at the wire's rate while the host
/// is busy; the rate counts what the host consumed, so it does not rise with them (the
/// deliveries' rate does, on a run this short).
#[test]
fn posting_buffers_ahead_does_not_raise_the_receive_rate() {
    for (config, few, many) in [("onloader", 2, 32), ("softnic", 4, 64)] {
        let (a, _) = ahead_run(config, few);
        let (b, deliveries) = ahead_run(config, many);
        assert_eq!(b.consumed, b.delivered, "{config}: {b:?}");
        assert!(
            b.throughput_mbps <= a.throughput_mbps * 1.05,
            "{config}: {} Mb/s with {many} ahead against {} with {few}",
            b.throughput_mbps,
            a.throughput_mbps
        );
        assert!(
            deliveries > 1.3 * b.throughput_mbps,
            "{config}: deliveries {deliveries} Mb/s against {} consumed",
            b.throughput_mbps
        );
    }
    // More buffers than the ring holds are refused by name.
    let v = Variant {
        rx_buffers: Some(1 << 20),
        ..Variant::default()
    };
    let c = cfg("wire = { duration_us = 400.0 }");
    let e = run_variant(&c, &spec("onloader", Direction::Rx, 1472, true), &v)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rx_posted_ahead") || e.contains("buffers"),
        "{e}"
    );
}
