"""WARC/1.1 (ISO 28500): the records of one fetch's bytes, each a gzip member, and their index facts.
"""
