"""The parameter server: transport and message codec (comm), scheduler, servers and workers."""
