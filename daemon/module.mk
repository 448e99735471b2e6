# daemon/: (nothing yet)
