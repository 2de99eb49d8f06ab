//! Writes the inputs of an energy comparison with DRAMPower for one config and one traffic
//! pattern: the DRAMPower trace of channel 0's commands, the device as a DRAMPower memspec, and
//! movelab's energy of the same run by component (JSON, nJ).
//!
//! `cargo run --release -p movelab-dram --example drampower_inputs -- CONFIG PATTERN COUNT OUTDIR`
//! [KEY=VALUE ...] (PATTERN: random or stream; KEY=VALUE: config overrides as `--set` takes them). The run has one channel and refresh as the config says; movelab's
//! `energy.bank_rho` is written into the memspec as `factRho`. docs/dram.md, "Energy against
//! DRAMPower", gives the commands that run DRAMPower on these files.
use movelab_dram::command::{CommandRecord, CommandSink, LogWriter};
use movelab_dram::command_log::LogReader;
use movelab_dram::config::Config;
use movelab_dram::drampower::memspec::memspec_json;
use movelab_dram::drampower::trace::write_trace;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::TraceItem;
use movelab_dram::system::{log_header, simulate, RunOptions};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 4 {
        return Err("usage: drampower_inputs CONFIG PATTERN COUNT OUTDIR [KEY=VALUE ...]".into());
    }
    let mut cfg = Config::preset(&a[0])?;
    for kv in &a[4..] {
        let (k, v) = kv
            .split_once('=')
            .ok_or(format!("'{kv}' is not KEY=VALUE"))?;
        let mut t: toml::Value = toml::from_str(&format!("v = {v}"))?;
        t = t.get("v").cloned().ok_or("no value")?;
        for part in k.rsplit('.') {
            let mut m = toml::map::Map::new();
            m.insert(part.to_string(), t);
            t = toml::Value::Table(m);
        }
        cfg = cfg.with_overrides(t, kv)?;
    }
    cfg.dram.channels = 1;
    let n: u64 = a[2].parse()?;
    let gen = match a[1].as_str() {
        "random" => GeneratorSpec::random(n, 0.7, 1),
        "stream" => GeneratorSpec::stream(n, 0.7, 1),
        p => return Err(format!("pattern '{p}': random or stream").into()),
    };
    let items: Vec<TraceItem> = gen.build()?.collect();
    let spec = cfg.resolve(&a[0])?;
    let mut log: Vec<CommandRecord> = Vec::new();
    let stats = simulate(
        &cfg,
        items.into_iter().map(Ok),
        RunOptions {
            command_log: Some(&mut log),
            ..Default::default()
        },
    )?;
    let header = log_header(&cfg, &spec);
    let mut w = LogWriter::new(Vec::new(), &header)?;
    for r in &log {
        w.record(r);
    }
    let text = w.finish()?;
    let out = PathBuf::from(&a[3]);
    std::fs::create_dir_all(&out)?;
    let mut trace = Vec::new();
    let s = write_trace(
        &header,
        LogReader::new(text.as_slice(), "log")?,
        0,
        Some(stats.cycles),
        &mut trace,
    )?;
    std::fs::write(out.join("trace.csv"), trace)?;
    let ms = memspec_json(&spec, cfg.energy.bank_rho)?;
    std::fs::write(out.join("memspec.json"), serde_json::to_string_pretty(&ms)?)?;
    let e = &stats.energy;
    let summary = serde_json::json!({
        "config": a[0], "overrides": a[4..], "pattern": a[1], "requests": n, "cycles": stats.cycles,
        "commands": s.commands, "commands_by_kind": stats.commands,
        "tck_ps": spec.t("tCK_ps"), "bank_rho": cfg.energy.bank_rho,
        "movelab_nj": {
            "activate": e.activate_nj, "precharge": e.precharge_nj, "read": e.read_nj,
            "write": e.write_nj, "refresh": e.refresh_nj, "background": e.background_nj,
            "core_total": e.total_nj - e.io_nj,
        },
    });
    std::fs::write(
        out.join("movelab.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    println!(
        "{}: {} commands, {} cycles -> {}",
        a[0],
        s.commands,
        stats.cycles,
        out.display()
    );
    Ok(())
}
