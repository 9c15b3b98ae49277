from logmine.cli import app

app()
