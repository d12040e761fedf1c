"""attn bench: measure attention implementations against sequence length (math and timing only).

``config`` (what to run and the row of results), ``impls`` (the implementations), ``devices``
(clocks, memory meters and limits per device), ``sweep`` (the loop that turns every failure
into a row), ``fit`` (log-log exponents), ``peaks`` (published GPU peaks). Nothing here
prints; ``attn_cli.render.bench_render`` lays the result out. torch is imported only inside
functions, so importing this package stays cheap.
"""
