//! Reuse distances of a recording's line touches in distinct lines (the LRU stack distance that
//! decides eviction from a least-recently-used cache), in O(n log m) for n touches in m calls.
//!
//! The touches come in time order, grouped by call: touch `j` belongs to call `row[j]`
//! (non-decreasing), `prev[j]` is the index of the previous touch of the same line (or -1) and
//! `weight[j]` how many lines it stands for (a buffer's sampled line stands for its share of the
//! buffer). The distance of touch `j` is the weight of the distinct lines touched by the calls
//! strictly between the call of `prev[j]` and the call of `j`, each line counted once with the
//! weight of its latest touch there. A Fenwick tree over calls holds, per call, the weight of its
//! touches that are still the latest touch of their line; before a call's touches are entered,
//! each of them asks the tree for the sum over the calls in between. The Python side
//! (`movelab.record.cachestate`) computes `prev` and the weights; a brute-force oracle there checks
//! the result.

use crate::error::{HostError, Result};

/// A Fenwick (binary indexed) tree of f64 sums over `0..n`.
struct Fenwick(Vec<f64>);

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick(vec![0.0; n + 1])
    }

    fn add(&mut self, i: usize, v: f64) {
        let mut k = i + 1;
        while k < self.0.len() {
            self.0[k] += v;
            k += k & k.wrapping_neg();
        }
    }

    /// Sum over `0..i`.
    fn prefix(&self, i: usize) -> f64 {
        let (mut k, mut s) = (i, 0.0);
        while k > 0 {
            s += self.0[k];
            k &= k - 1;
        }
        s
    }
}

/// Per touch: the distinct-line distance (see the module's description); NaN for a touch with no
/// previous touch, 0 for a line met earlier in the same call. Refuses inputs of unequal length,
/// a decreasing `row`, a `prev` that does not point to an earlier touch and a negative or
/// non-finite weight, naming the first offending index.
pub fn distinct_line_distances(row: &[i64], prev: &[i64], weight: &[f64]) -> Result<Vec<f64>> {
    let n = row.len();
    if prev.len() != n || weight.len() != n {
        return Err(HostError::Invalid(format!(
            "reuse distances: row, prev and weight must have one entry per touch, got {}, {} and {}",
            n,
            prev.len(),
            weight.len()
        )));
    }
    for (j, ((&r, &p), &w)) in row.iter().zip(prev).zip(weight).enumerate() {
        if r < 0 || (j > 0 && r < row[j - 1]) {
            return Err(HostError::Invalid(format!(
                "reuse distances: row[{j}] = {r} is negative or below row[{}]",
                j.saturating_sub(1)
            )));
        }
        if p < -1 || p >= j as i64 {
            return Err(HostError::Invalid(format!(
                "reuse distances: prev[{j}] = {p} does not point to an earlier touch"
            )));
        }
        if !w.is_finite() || w < 0.0 {
            return Err(HostError::Invalid(format!(
                "reuse distances: weight[{j}] = {w} is not a non-negative number"
            )));
        }
    }
    let calls = row.last().map_or(0, |&r| r as usize + 1);
    let mut tree = Fenwick::new(calls);
    let mut out = vec![f64::NAN; n];
    let mut start = 0;
    while start < n {
        let r = row[start];
        let mut end = start;
        while end < n && row[end] == r {
            end += 1;
        }
        // The call's queries, before any of its touches is entered.
        for (o, &p) in out[start..end].iter_mut().zip(&prev[start..end]) {
            if p < 0 {
                continue;
            }
            let pr = row[p as usize];
            *o = if pr == r {
                0.0
            } else {
                (tree.prefix(r as usize) - tree.prefix(pr as usize + 1)).max(0.0)
            };
        }
        // Its touches become the latest of their lines.
        for (&p, &w) in prev[start..end].iter().zip(&weight[start..end]) {
            if p >= 0 {
                tree.add(row[p as usize] as usize, -weight[p as usize]);
            }
            tree.add(r as usize, w);
        }
        start = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: the set of lines (with the weight of their latest touch) of the calls in between.
    fn oracle(row: &[i64], prev: &[i64], line: &[u64], weight: &[f64]) -> Vec<f64> {
        (0..row.len())
            .map(|j| {
                if prev[j] < 0 {
                    return f64::NAN;
                }
                let pr = row[prev[j] as usize];
                if pr == row[j] {
                    return 0.0;
                }
                let mut latest = std::collections::HashMap::new();
                for ((&rk, &lk), &wk) in row[..j].iter().zip(&line[..j]).zip(&weight[..j]) {
                    if rk > pr && rk < row[j] {
                        latest.insert(lk, wk);
                    }
                }
                latest.values().sum()
            })
            .collect()
    }

    #[test]
    fn matches_a_brute_force_oracle() {
        // A small deterministic generator (no dependency): lines 0..12, calls of 1-4 touches.
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..50 {
            let (mut row, mut line, mut weight) = (vec![], vec![], vec![]);
            for r in 0..30 {
                for _ in 0..1 + next() % 4 {
                    row.push(r);
                    line.push(next() % 12);
                    weight.push((1 + next() % 3) as f64);
                }
            }
            let mut last = std::collections::HashMap::new();
            let prev: Vec<i64> = line
                .iter()
                .enumerate()
                .map(|(j, l)| last.insert(*l, j as i64).unwrap_or(-1))
                .collect();
            let got = distinct_line_distances(&row, &prev, &weight).unwrap();
            let want = oracle(&row, &prev, &line, &weight);
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g.is_nan() && w.is_nan()) || (g - w).abs() < 1e-9,
                    "{g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn bad_input_is_refused_naming_the_index() {
        let e = distinct_line_distances(&[0, 1], &[-1], &[1.0, 1.0]).unwrap_err();
        assert!(e.to_string().contains("one entry per touch"));
        let e = distinct_line_distances(&[1, 0], &[-1, -1], &[1.0, 1.0]).unwrap_err();
        assert!(e.to_string().contains("row[1]"));
        let e = distinct_line_distances(&[0, 1], &[-1, 1], &[1.0, 1.0]).unwrap_err();
        assert!(e.to_string().contains("prev[1]"));
        let e = distinct_line_distances(&[0, 1], &[-1, 0], &[1.0, f64::NAN]).unwrap_err();
        assert!(e.to_string().contains("weight[1]"));
        assert!(distinct_line_distances(&[], &[], &[]).unwrap().is_empty());
    }
}
