# estimator/: (nothing yet)
