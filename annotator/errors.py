class ApplicationError(Exception):
    """The one exception a service raises for a person's mistake.

    The DRF exception handler and the HTML views turn it into a clear 400 (or `status`), never a 500.
    `extra` carries structured detail, e.g. the list of offenders of a failed import.
    """

    def __init__(self, message: str, extra: dict | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        self.status = status
