"""Porter-stemmed bag-of-words tokens (Kandola et al. §6: stop words and punctuation removed, Porter stemmer).

The stemmer is PyStemmer's Porter algorithm (``Stemmer.Stemmer("porter")``,
the original 1980 algorithm), applied after scikit-learn's tokenizer (words
of two or more letters or digits: punctuation is dropped) and its English
stop-word list.
"""

__all__ = ["PorterAnalyzer"]


class PorterAnalyzer:
    """A picklable ``CountVectorizer(analyzer=...)``: lower-cased tokens, stop words removed, Porter stems."""

    def __init__(self):
        self._tokens = None
        self._stemmer = None

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self._tokens = None
        self._stemmer = None

    def _ready(self):
        if self._stemmer is None:
            try:
                import Stemmer
            except ImportError:
                raise ImportError("stem=True needs PyStemmer's Porter stemmer: pip install 'dkernel[text]' "
                                  "(or pip install PyStemmer).") from None
            from sklearn.feature_extraction.text import CountVectorizer

            self._tokens = CountVectorizer(stop_words="english").build_analyzer()
            self._stemmer = Stemmer.Stemmer("porter")

    def __call__(self, text):
        self._ready()
        return self._stemmer.stemWords(self._tokens(text))
