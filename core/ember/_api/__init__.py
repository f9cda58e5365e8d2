"""ember's public surface measured against torch's: the signature snapshot of torch 2.13
(``torch_signatures.json``, written by ``tools/torch_signatures.py``) and the binding layer that
makes every public function and Tensor method take torch's keywords and word torch's errors
(``binding.py``)."""
