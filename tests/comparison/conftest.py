collect_ignore_glob = ["*.ipynb"]
