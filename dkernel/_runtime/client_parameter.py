"""An estimator's ``client`` parameter: a live connection to a cluster, shared by clones, never copied.

scikit-learn's :func:`~sklearn.base.clone` deep-copies an estimator's parameters, and :mod:`pickle` copies its
state; a :class:`distributed.Client` holds sockets and event-loop tasks and can be neither ("cannot pickle
'_asyncio.Task' object"). :class:`ClientParameterMixin` lets every estimator that takes ``client=`` take part in
``GridSearchCV``, ``cross_val_score`` and ``Pipeline`` as scikit-learn's own do:

* a clone shares the client (the same object, as the folds of a search run on the same cluster);
* a pickled estimator (joblib's worker processes, a user's ``pickle.dumps``) is saved with ``client=None``: the
  copy uses the default client where it runs (:func:`dkernel._runtime.client.resolve_client`), or none. A client
  spec given as a string (``"local:2"``) is a plain value and is kept.
"""

__all__ = ["ClientParameterMixin"]


def _is_connection(client):
    return client is not None and not isinstance(client, str)


class ClientParameterMixin:
    """``__sklearn_clone__`` and ``__getstate__`` for an estimator whose ``client`` parameter may be a
    :class:`distributed.Client`. Put it before :class:`~sklearn.base.BaseEstimator` in the bases.

    Examples
    --------
    >>> import pickle
    >>> from sklearn.base import clone
    >>> from dkernel import SVC
    >>> class FakeClient:  # any object that cannot be copied, as a distributed.Client
    ...     def __deepcopy__(self, memo):
    ...         raise TypeError("cannot pickle '_asyncio.Task' object")
    ...     __reduce__ = __deepcopy__
    >>> client = FakeClient()
    >>> clone(SVC(C=2.0, client=client)).client is client
    True
    >>> pickle.loads(pickle.dumps(SVC(C=2.0, client=client))).get_params()["client"] is None
    True
    """

    def __sklearn_clone__(self):
        from sklearn.base import _clone_parametrized

        client = self.__dict__.get("client")
        if not _is_connection(client):
            return _clone_parametrized(self)
        self.client = None  # cloned without it, then given the same object
        try:
            twin = _clone_parametrized(self)
        finally:
            self.client = client
        twin.client = client
        return twin

    def __getstate__(self):
        state = super().__getstate__()
        if _is_connection(state.get("client")):
            state = {**state, "client": None}
        return state
