"""Reading and writing the user's files: discovery and ignore files, encodings,
notebooks, the result cache, SARIF output and the progress bar."""
