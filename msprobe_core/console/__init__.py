"""What a run says on the console: msprobe's log line format and the progress bar."""
