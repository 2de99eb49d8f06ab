//! Assembles a run's [`Stats`] from its controllers (latencies, row outcomes, command counts,
//! energy) and its bulk-operation totals: shared by the trace-driven `system::simulate` and the
//! step-driven `port::MemoryPort`, below both.
use crate::bulk::ops::BulkTotals;
use crate::command::CommandKind;
use crate::config::Config;
use crate::controller::Controller;
use crate::energy::{add_energy, channel_energy, CommandEnergy};
use crate::spec::DramSpec;
use crate::stats::{BulkStats, EnergyBreakdown, Histogram, InDramCopy, RowStats, Stats};
use std::collections::BTreeMap;

/// Settles the controllers at cycle `end` and assembles the run's statistics.
pub fn collect_stats(
    config: &Config,
    spec: &DramSpec,
    chans: &mut [Controller],
    end: u64,
    bulk: &BulkTotals,
) -> Stats {
    let org = &spec.org;
    let cc = &config.controller;
    let line = org.line_bytes();
    let tck = spec.t("tCK_ps");
    let e = CommandEnergy::new(spec, config.energy.io_pj_per_bit, config.energy.bank_rho);
    let mut energy = EnergyBreakdown::default();
    let mut read_h = Histogram::default();
    let mut write_h = Histogram::default();
    let mut row = RowStats::default();
    let mut commands = BTreeMap::new();
    let (mut reads, mut writes) = (0, 0);
    for ch in chans.iter_mut() {
        ch.finish(end);
        add_energy(
            &mut energy,
            &channel_energy(&e, &ch.counters, &ch.dev.activity),
        );
        read_h.merge(&ch.counters.read_latency);
        write_h.merge(&ch.counters.write_latency);
        row.hits += ch.counters.row.hits;
        row.misses += ch.counters.row.misses;
        row.conflicts += ch.counters.row.conflicts;
        reads += ch.counters.reads;
        writes += ch.counters.writes;
        for k in CommandKind::ALL {
            let n = ch.counters.commands[k.index()];
            // RFM (RFMSB, RFMPB) is listed where it was issued (a device with refresh management that needed it).
            // CAS likewise (LPDDR5 in WCK auto sync-off mode), so existing digests hold.
            if matches!(
                k,
                CommandKind::Rfm | CommandKind::Rfmsb | CommandKind::Rfmpb | CommandKind::Cas
            ) && n == 0
            {
                continue;
            }
            *commands.entry(k.mnemonic().to_string()).or_insert(0u64) += n;
        }
    }
    let time_ns = end as f64 * tck as f64 / 1000.0;
    let channel_bytes = (reads + writes) * line;
    Stats {
        standard: spec.standard.clone(),
        speed: spec.speed.clone(),
        part: spec.part.clone(),
        channels: org.channels,
        ranks: org.ranks,
        scheduler: cc.scheduler.clone(),
        row_policy: cc.row_policy.clone(),
        mapper: cc.mapper.clone(),
        bulk_mechanism: cc.bulk.clone(),
        tck_ps: tck,
        cycles: end,
        time_ns,
        reads,
        writes,
        read_latency: read_h.summary(tck),
        write_latency: write_h.summary(tck),
        channel_bytes,
        bandwidth_gb_s: if time_ns > 0.0 {
            channel_bytes as f64 / time_ns
        } else {
            0.0
        },
        row,
        commands,
        energy,
        energy_available: spec.energy_available,
        bulk: BulkStats {
            ops: bulk.copies + bulk.inits,
            copies: bulk.copies,
            inits: bulk.inits,
            bytes: bulk.bytes.clone(),
            latency: bulk.latency.summary(tck),
            in_dram_copy: in_dram_copy(config, spec, bulk),
        },
    }
}

/// The in-DRAM copy label of a run whose mechanism copies in DRAM on a part that does it.
fn in_dram_copy(config: &Config, spec: &DramSpec, bulk: &BulkTotals) -> Option<InDramCopy> {
    use crate::bulk::copy_reliability::{chip, provenance};
    let cc = &config.controller;
    let m = cc.copy.model();
    if cc.bulk == "baseline" || !m.supported {
        return None;
    }
    let c = chip(&cc.copy.chip).ok()?;
    Some(InDramCopy {
        chip: c.name.into(),
        provenance: provenance(c, &spec.standard).label().into(),
        success: m.success,
        retries: bulk.copy_retries,
    })
}
