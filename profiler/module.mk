# profiler/: (nothing yet)
