# validation/bench
