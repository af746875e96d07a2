"""Networks used across the chapters and the rule of which modules are layers; models only compute."""
