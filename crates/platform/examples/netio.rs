//! Runs Wun & Crowley's three configurations once per payload on the one platform (two
//! `ixp-host`s on one wire, `systems/udp_pair.rs`) and prints the figures:
//! `cargo run --release -p movelab-platform --example netio -- [rx|tx] [payloads,...] [TOML overrides]`.
use movelab_platform::systems::udp_pair::{load, run, Direction, RunSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = if args.get(1).map(String::as_str) == Some("tx") {
        Direction::Tx
    } else {
        Direction::Rx
    };
    let payloads: Vec<usize> = args
        .get(2)
        .map(|s| s.split(',').filter_map(|v| v.parse().ok()).collect())
        .unwrap_or_else(|| vec![64, 256, 512, 1024, 1472]);
    let over: toml::Value = match args.get(3) {
        Some(o) => toml::from_str(o)?,
        None => toml::Value::Table(Default::default()),
    };
    let cfg = load("ixp2350", &over)?;
    for p in payloads {
        let mut line = format!("{p:5}");
        for c in ["emu", "softnic", "onloader"] {
            let t0 = std::time::Instant::now();
            let s = run(
                &cfg,
                &RunSpec {
                    config: c.into(),
                    direction: dir,
                    payload: p,
                    with_app: true,
                },
            )?
            .stats;
            line += &format!(
                "  {c} {:7.1} Mb/s (me rx {:.2} tx {:.2} sent {} dl {} drop {} irqs {} {:.0} ms)",
                s.throughput_mbps,
                s.rx_cores_busy,
                s.tx_cores_busy,
                s.sent,
                s.delivered,
                s.rbuf_drops,
                s.interrupts,
                t0.elapsed().as_secs_f64() * 1e3
            );
        }
        println!("{line}");
    }
    Ok(())
}
