"""Scenarios that use the product from outside, as management commands do: the demo (a showcase), the
simulated crowd (a rehearsal of the quality policy) and the synthetic datasets they run on."""
