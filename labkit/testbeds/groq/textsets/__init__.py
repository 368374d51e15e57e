"""labkit's hand-written sentence sets (CSV files, README.md beside them), offline stand-ins for SST and
STS-B; ``labkit.testbeds.groq.evalsets`` reads them."""
