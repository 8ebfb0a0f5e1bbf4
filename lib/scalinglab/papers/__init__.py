"""Each paper's own numbers and procedures: published constants and laws (Hoffmann/Epoch, Kaplan),
Pearce & Song, Porian et al., Gadre et al. (overtraining and warmup grid), Gemstones."""
