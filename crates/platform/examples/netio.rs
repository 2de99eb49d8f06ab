//! Runs the network-I/O platform once per configuration and payload and prints the figures:
//! `cargo run --release -p movelab-platform --example netio -- [rx|tx] [payloads,...] [TOML overrides]`.
use movelab_platform::config::network::NetworkIoConfig;
use movelab_platform::systems::network_io::{run, Direction, RunSpec};

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
    let mut cfg = NetworkIoConfig::load("ixp2350")?;
    if let Some(o) = args.get(3) {
        cfg = cfg.with_overrides(toml::from_str(o)?, "args")?;
    }
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
            )?;
            line += &format!(
                "  {c} {:7.1} Mb/s (irq {:.2} soft {:.2} proc {:.2} spin {:.2} idle {:.2} me {:.2} dl {} drop r{} q{} b{} s{} irqs {} {:.0} ms)",
                s.throughput_mbps, s.host_irq, s.host_softirq, s.host_process, s.host_spin, s.host_idle,
                s.small_core_busy, s.delivered, s.rbuf_drops, s.ring_drops, s.buffer_drops, s.socket_drops,
                s.interrupts, t0.elapsed().as_secs_f64() * 1e3
            );
        }
        println!("{line}");
    }
    Ok(())
}
