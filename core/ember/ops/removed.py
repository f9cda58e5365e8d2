"""Names torch keeps only to say what replaced them (``torch._linalg_utils`` and
``Tensor.reinforce``): they take torch's arguments, and calling one raises torch's RuntimeError
naming the replacement."""
from __future__ import annotations

from .._tensor import Tensor

_DEPRECATED = "This function was deprecated since version 1.9 and is now removed."
_REPLACEMENTS = {
    "matrix_rank": "`torch.matrix_rank` is deprecated in favor of `torch.linalg.matrix_rank`",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
             "`torch.linalg.lstsq` has reversed arguments and does not return the QR "
             "decomposition in the returned tuple (although it returns other information about "
             "the problem).",
    "symeig": "`torch.symeig` is deprecated in favor of `torch.linalg.eigh`.\n"
              "The default behavior has changed from using the upper triangular portion of the "
              "matrix by default to using the lower triangular portion.",
    "eig": "`torch.eig` is deprecated in favor of `torch.linalg.eig`.",
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
             "has its arguments reversed and does not return the LU factorization.",
}


def _raise(name):
    raise RuntimeError(f"{_DEPRECATED} {_REPLACEMENTS[name]}".replace("torch.", "ember."))


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    _raise("matrix_rank")


def lstsq(input, A, *, out=None):
    _raise("lstsq")


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    _raise("symeig")


def eig(self, eigenvectors=False, *, e=None, v=None):
    _raise("eig")


def solve(input, A, *, out=None):
    _raise("solve")


REMOVED = {"matrix_rank": matrix_rank, "lstsq": lstsq, "symeig": symeig, "eig": eig,
           "solve": solve}


# the Tensor methods: removed the same way
def _lstsq_method(self, other):
    _raise("lstsq")


def _solve_method(self, other):
    _raise("solve")


def _symeig_method(self, eigenvectors=False):
    _raise("symeig")


def _eig_method(self, eigenvectors=False):
    _raise("eig")


def _reinforce(self, reward):
    raise RuntimeError("reinforce() was removed.\nUse ember.distributions instead.")


Tensor.lstsq, Tensor.solve, Tensor.symeig, Tensor.eig = (_lstsq_method, _solve_method,
                                                         _symeig_method, _eig_method)
Tensor.reinforce = _reinforce
