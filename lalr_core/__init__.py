__version__ = "0.3.0"  # 0.3.0: cache keys of every run changed (methods sub-configs, layout)
