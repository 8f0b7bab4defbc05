"""Conv chains (homogeneous conv nets, circular or zero padding): the closed-form coherent law
(``conv``), the exact infinite-width laws (``spectral``: linear circular; ``operator_law``: linear,
either padding; ``kernel_law``: ReLU, either padding) and the zero-padding boundary (``boundary``)."""
