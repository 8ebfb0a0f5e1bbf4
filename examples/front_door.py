"""The library's front door: read runs, fit a law, ask the fit what it knows (docs/cli.md, "From Python")."""

import scalinglab as sl

runs = sl.load_runs("examples/cpu_sweep_runs.csv")       # or sl.load_runs(dataset="epoch-chinchilla")
fit = sl.fit(runs, law="chinchilla", bootstrap=200)      # any law in sl.laws.names()

print(f"status {fit.status}; alpha {fit.params['alpha']:.3f} ± {fit.bse['alpha']:.3f}")
lo, hi = fit.conf_int()["a"]
print(f"N_opt ∝ C^a with a = {fit.a:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] (bootstrap over runs)")
(row,) = fit.allocate(1e13)
print(f"at C = 1e13 FLOP: N_opt {row['n_opt']:.3g} [{row['ci']['n_opt'][0]:.3g}, {row['ci']['n_opt'][1]:.3g}]")
print(fit.summary().splitlines()[0])                     # the table `scalinglab fit` prints; to_dict(): its JSON
