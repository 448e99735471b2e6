// clients/dashboard/breakdown.js: the parts of a replayed or estimated step
// (the `breakdown` object of the replay, what-if and estimate documents), in
// the order the charts stack them, with the words the page uses.

export const BREAKDOWN = [
  ['compute_exposed', 'compute alone'], ['overlap', 'compute and communication overlapped'],
  ['comm_exposed', 'communication exposed'], ['unexplained', 'unexplained waits'], ['host', 'host'], ['idle', 'idle'],
];

// The parts a document has (an estimate has no unexplained waits).
export function partsOf(breakdown) {
  return BREAKDOWN.filter(([k]) => k in (breakdown || {}));
}

// The mean breakdown over a replay's steps.
export function meanBreakdown(steps) {
  const out = Object.fromEntries(BREAKDOWN.map(([k]) => [k, 0]));
  for (const s of steps) for (const [k] of BREAKDOWN) out[k] += (s.breakdown || {})[k] || 0;
  for (const [k] of BREAKDOWN) out[k] /= steps.length || 1;
  return out;
}
